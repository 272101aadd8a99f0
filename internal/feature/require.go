package feature

import (
	"errors"
	"testing"
)

// Of tags tb, and the subtests it starts, as a test of seed: its failures
// make the seed BROKEN on this kernel, its probes can make it absent.
func Of(tb testing.TB, seed Seed) {
	tb.Helper()
	tb.Log(Record{Seed: seed}.String())
}

// Require skips tb when err says a feature is not supported, naming the
// probe; it fails tb when the kernel is expected to have the feature (the
// expectation names it, or a seed it gates) or when err is a real error. A
// nil err returns at once.
func Require(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	var ue *UnsupportedError
	if !errors.As(err, &ue) {
		tb.Fatalf("probe failed: %v", err)
	}
	tb.Log(Record{Feature: ue.Feature, Absent: true, Why: ue.Probe}.String())
	if e := Expected(); e.WantFeature(ue.Feature) {
		tb.Fatalf("%v, but this kernel is expected to have it ($%s=%s)", err, ExpectEnv, e)
	}
	tb.Skip(err.Error())
}

// Shows records that tb observed seed's behaviour itself (what, in why):
// the queue stopped where the seed stops it, the program ran where the
// seed runs it. A seed is present on a kernel only where a test that
// recorded this passed; tests that pass with or without the seed (a
// ledger that balances, a queue that never stalls) can make it BROKEN but
// never present, so a run of only those (a -run that left the others out)
// is an error, not a green verdict.
func Shows(tb testing.TB, seed Seed, why string) {
	tb.Helper()
	tb.Log(Record{Seed: seed, Shown: true, Why: why}.String())
}

// Absent ends tb on a kernel that showed the behaviour from before seed,
// exactly (what the test observed in why): no probe of a feature can tell,
// only the behaviour. Where the expectation says the seed is absent that is
// an expected failure (XFAIL); anywhere else the test fails, so a kernel
// without the seed never passes its test.
//
// A test that has already failed saw something else too: Absent then fails
// it plainly, so its seed is BROKEN rather than absent.
func Absent(tb testing.TB, seed Seed, why string) {
	tb.Helper()
	if tb.Failed() {
		tb.Fatalf("seed %s looked absent (%s), but the test had already failed: not the behaviour from before the seed", seed, why)
	}
	tb.Log(Record{Seed: seed, Absent: true, Why: why}.String())
	if want, ok := Expected().Seeds[seed]; ok && !want {
		tb.Skipf("XFAIL seed %s absent, as expected: %s", seed, why)
	}
	tb.Fatalf("seed %s absent: %s", seed, why)
}

// Known ends tb as an expected failure (XFAIL) when the test observed
// exactly the known issue and the expectation allows it on this kernel, or
// judges nothing (a kernel outside the expectation file); anywhere else tb
// fails: a kernel that was thought fixed has regressed.
//
// Like Absent, it fails plainly a test that has already failed.
func Known(tb testing.TB, issue Issue, observed string) {
	tb.Helper()
	if tb.Failed() {
		tb.Fatalf("known kernel issue %s seen (%s), but the test had already failed", issue, observed)
	}
	tb.Log(Record{Issue: issue, Why: observed}.String())
	if e := Expected(); e.Known[issue] || e.Empty() {
		tb.Skipf("XFAIL known kernel issue %s: %s", issue, observed)
	}
	tb.Fatalf("known kernel issue %s on a kernel expected to be free of it: %s", issue, observed)
}
