// Package observe is how a suite test reports what it saw to the judge on the
// host: which seed it tests (Of), a probe that found a feature missing
// (Require, Probe), a failure that is not the kernel's (Fault), the seed's
// behaviour shown (Shows) or the behaviour from before
// it (Absent), a known defect seen exactly (Known). Each is a feature.Record
// line in the test's output; the test never learns what its kernel is
// expected to show.
package observe

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// Of tags tb, and the subtests it starts, as a test of seed: its failures
// make the seed BROKEN on this kernel, its probes can make it absent. It
// marks the test's start in the kernel log, and its end after every other
// cleanup (they run last-in, first-out): a kernel report between the two
// marks, teardown included, is this test's (feature.Mark).
func Of(tb testing.TB, seed feature.Seed) {
	tb.Helper()
	tb.Log(feature.Record{Seed: seed}.String())
	tagged(tb.Name(), seed)
	Step(tb)
	feature.Mark(feature.TestStart, tb.Name())
	tb.Cleanup(func() { feature.Mark(feature.TestEnd, tb.Name()) })
	// Its profile begins here, its teardown with every cleanup but the mark.
	profile.Begin(tb)
}

// Require skips tb when err says a feature is not supported, naming the
// probe, and fails it when err is a real error. A nil err returns at once.
// Where the kernel is expected to have the feature, the judge fails the
// skipped test, so a skip never hides a regression.
func Require(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	var ue *feature.UnsupportedError
	if !errors.As(err, &ue) {
		Fault(tb, feature.Environment, "probe failed: %v", err)
	}
	tb.Log(feature.Record{Feature: ue.Feature, Absent: true, Why: ue.Probe}.String())
	tb.Skip(err.Error())
}

// Probe is Require for a probe of f: it also records that the probe found f
// there, so that a kernel expected to lack f ("!F") fails where it has it.
// An absence the probe reports (of f, or of a feature f needs) is
// Require's.
func Probe(tb testing.TB, f feature.Feature, err error) {
	tb.Helper()
	if err == nil {
		tb.Log(feature.Record{Feature: f, Present: true}.String())
		return
	}
	Require(tb, err)
}

// LeansOn says that tb, a test of another seed, runs over seed's machinery
// (what says which: "a tap with IFF_BACKPRESSURE"): where seed is BROKEN on
// the same kernel, the judge reports tb's failure under it and leaves tb's
// own seed to its tests on independent devices.
func LeansOn(tb testing.TB, seed feature.Seed, what string) {
	tb.Helper()
	tb.Log(feature.Record{Uses: seed, Why: what}.String())
	faulted(tb.Name())
}

// Fault fails tb on something that is not the kernel's doing (the
// message says what): the judge then calls its seed untested (error),
// never BROKEN. A kernel report during the test still makes it BROKEN.
func Fault(tb testing.TB, f feature.Fault, format string, args ...any) {
	tb.Helper()
	tb.Log(feature.Record{Fault: f, Why: fmt.Sprintf(format, args...)}.String())
	faulted(tb.Name())
	tb.Fatalf(format, args...)
}

// Lost fails tb, without stopping it, on an instrument that lost events
// (the message names it and says how many): what it counted cannot judge
// the kernel, so the judge calls the test's seed error. It may be called
// from a cleanup.
func Lost(tb testing.TB, format string, args ...any) {
	tb.Helper()
	tb.Log(feature.Record{Fault: feature.Instrument, Why: fmt.Sprintf(format, args...)}.String())
	faulted(tb.Name())
	tb.Errorf(format, args...)
}

// Shows records that tb observed seed's behaviour itself (what, in why):
// the queue stopped where the seed stops it, the program ran where the
// seed runs it. A seed is present on a kernel only where a test that
// recorded this passed; tests that pass with or without the seed (a
// ledger that balances, a queue that never stalls) can make it BROKEN but
// never present.
func Shows(tb testing.TB, seed feature.Seed, why string) {
	tb.Helper()
	tb.Log(feature.Record{Seed: seed, Shown: true, Why: why}.String())
}

// Raced records that tb drove n of seed's handshakes while a sanitizer of
// the kernel watched them (why says which, how long and what it did).
func Raced(tb testing.TB, seed feature.Seed, n uint64, why string) {
	tb.Helper()
	tb.Log(feature.Record{Raced: seed, Handshakes: n, Why: why}.String())
}

// Absent ends tb on a kernel that showed the behaviour from before seed,
// exactly (what the test observed, in why): no probe of a feature can
// tell, only the behaviour. The seed is then absent; whether that is
// expected is the judge's to say.
//
// A test that has already failed saw something else too: Absent then fails
// it plainly, so its seed is BROKEN rather than absent.
func Absent(tb testing.TB, seed feature.Seed, why string) {
	tb.Helper()
	if tb.Failed() {
		tb.Fatalf("seed %s looked absent (%s), but the test had already failed: not the behaviour before the seed",
			seed, why)
	}
	end(tb, feature.Record{Seed: seed, Absent: true, Why: why}, "seed "+string(seed)+" absent: "+why)
}

// Known ends tb on a kernel that showed exactly the known issue, once
// every other check passed. The judge makes it an expected failure
// (XFAIL) where the expectation allows the issue, and a failure anywhere
// else: a kernel that was thought fixed has regressed.
//
// Like Absent, it fails plainly a test that has already failed.
func Known(tb testing.TB, issue feature.Issue, observed string) {
	tb.Helper()
	if tb.Failed() {
		tb.Fatalf("known kernel issue %s seen (%s), but the test had already failed", issue, observed)
	}
	end(tb, feature.Record{Issue: issue, Why: observed}, "known kernel issue "+string(issue)+": "+observed)
}

// end logs rec and ends tb: a skip for the judge to decide, or a failure
// where nobody judges.
func end(tb testing.TB, rec feature.Record, msg string) {
	tb.Helper()
	tb.Log(rec.String())
	if os.Getenv(feature.JudgedEnv) != "" {
		tb.Skip(msg)
	}
	tb.Fatal(msg)
}
