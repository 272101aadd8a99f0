package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/ksft"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/kernels"
)

// collection writes an installed collection's files a test reads, without
// its binaries.
func collection(t *testing.T, expect string) ksft.Tree {
	t.Helper()
	tr := ksft.Tree{Root: t.TempDir()}
	assert.NilError(t, tr.WriteCollection([]string{"tun", "vhost"}, 0, kernels.ExpectationsFile(), kernels.Config, expect))
	return tr
}

// TestKselftestExpectation: the collection's line for the kernel (named by
// XMITCHECK_KERNEL, else by its release), --expect over it naming only
// the suite's own seeds, and the running kernel's rule for a release the
// catalog does not know.
func TestKselftestExpectation(t *testing.T) {
	tr := collection(t, "")
	k := &kernels.Kernel{Release: "6.12.117+deb13-amd64", Host: true}
	e, src, named, err := ksftExpectation(tr, k, "tun", "")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(k.Name, "debian:6.12"))
	assert.Check(t, is.Contains(src, "debian:6.12, the catalog kernel of release 6.12.117+deb13-amd64"))
	assert.Check(t, !e.Seeds[feature.Seed000Tun])
	assert.Check(t, is.Len(named, 0))

	e, src, named, err = ksftExpectation(tr, k, "tun", "000,004")
	assert.NilError(t, err)
	assert.Check(t, e.Seeds[feature.Seed000Tun] && e.Seeds[feature.Seed004])
	assert.Check(t, strings.HasPrefix(src, "--expect 000,004 over "))
	assert.Check(t, is.DeepEqual(named, []feature.Seed{feature.Seed000Tun}),
		"000-vhost and 004 are other suites' to answer")

	t.Setenv("XMITCHECK_KERNEL", "debian:7.3")
	e, _, _, err = ksftExpectation(tr, k, "vhost", "")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(k.Name, "debian:7.3"))
	assert.Check(t, e.Seeds[feature.Seed000Vhost])

	t.Setenv("XMITCHECK_KERNEL", "")
	k = &kernels.Kernel{Release: "6.18.44-fc-v1272", Host: true}
	e, src, _, err = ksftExpectation(tr, k, "tun", "")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(k.Name, "host"))
	assert.Check(t, is.Len(e.Seeds, 0))
	assert.Check(t, is.Contains(src, "seeds not judged"))

	_, _, _, err = ksftExpectation(tr, k, "tun", "000,,003")
	assert.ErrorContains(t, err, "an empty item between commas")

	tr = collection(t, "!000")
	e, src, named, err = ksftExpectation(tr, k, "vhost", "")
	assert.NilError(t, err)
	assert.Check(t, is.Contains(src, "--expect !000 over"), "the collection's expect file")
	assert.Check(t, is.DeepEqual(named, []feature.Seed{feature.Seed000Vhost}))
	assert.Check(t, !e.Seeds[feature.Seed000Vhost])

	_, _, _, err = ksftExpectation(ksft.Tree{Root: t.TempDir()}, k, "tun", "")
	assert.ErrorContains(t, err, "install the collection again")
}

// TestKselftestTimeout: the runner's timeout, else the settings', less
// the margins that let the test print its KTAP before the runner kills it.
func TestKselftestTimeout(t *testing.T) {
	tr := collection(t, "")
	t.Setenv("kselftest_timeout", "")
	assert.Check(t, is.Equal(ksftTimeout(tr), time.Duration(ksft.Timeout)*time.Second))
	t.Setenv("kselftest_timeout", "120")
	assert.Check(t, is.Equal(ksftTimeout(tr), 2*time.Minute))
	assert.Check(t, binaryMargin > runMargin, "the test binary's own deadline comes first")
	t.Setenv("kselftest_timeout", "")
	assert.Check(t, is.Equal(ksftTimeout(ksft.Tree{Root: t.TempDir()}), time.Duration(ksft.Timeout)*time.Second))
}

// TestKselftestCode: a failure or a verdict that differs fails; a run
// whose every seed is absent (or that judged none) is a skip; one seed
// present passes.
func TestKselftestCode(t *testing.T) {
	run := func(states ...results.State) *results.Run {
		r := results.NewRun("debian:6.12")
		r.Add(results.Event{Action: "run", Package: "p", Test: "TestA"})
		r.Add(results.Event{Action: "pass", Package: "p", Test: "TestA"})
		r.Finish(nil)
		for i, st := range states {
			r.Verdicts = append(r.Verdicts, results.Verdict{Seed: feature.Seeds[i].Seed, State: st, Want: st})
		}
		return r
	}
	assert.Check(t, is.Equal(ksftCode(run(results.Present, results.Absent)), ksftPass))
	assert.Check(t, is.Equal(ksftCode(run(results.Absent, results.Absent)), ksftSkip))
	assert.Check(t, is.Equal(ksftCode(run()), ksftSkip))
	r := run(results.Absent)
	r.Verdicts[0].Want = results.Present
	assert.Check(t, is.Equal(ksftCode(r), ksftFail), "absent where present is wanted")
	assert.Check(t, is.Equal(ksftCode(run(results.Broken)), ksftFail))
	r = run(results.Present)
	r.Add(results.Event{Action: "fail", Package: "p", Test: "TestA"})
	assert.Check(t, is.Equal(ksftCode(r), ksftFail))
}

// TestKselftestUsage: a usage error fails the test (exit 1: 2 would be
// kselftest's XFAIL) with one line that says what to do; outside an
// installed collection, the program says to install one.
func TestKselftestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "kselftest: name the suite first"},
		{[]string{"-run", "x"}, "kselftest: name the suite first"},
		{[]string{"tun", "-frob"}, "flag provided but not defined: -frob"},
		{[]string{"tun", "extra"}, `kselftest: one suite, then flags: "extra" is neither`},
		{[]string{"tun"}, "install the collection again (xmitcheck suites install)"},
	} {
		code, stderr := xc(t, []string{"XMITCHECK_EXPECT="}, nil, append([]string{"kselftest"}, tc.args...)...)
		assert.Check(t, is.Equal(code, ksftFail), "%v", tc.args)
		assert.Check(t, is.Equal(strings.Count(stderr, "\n"), 1), "stderr: %q", stderr)
		assert.Check(t, is.Contains(stderr, tc.want))
	}
}

// TestKselftestSkipsWithReason: in a collection, a suite that is not
// there, or whose binaries are missing, is a skip that says why, in KTAP.
func TestKselftestSkipsWithReason(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the checks after the suite's name need root (a user gets the not-root skip first)")
	}
	tr := collection(t, "")
	prog := tr.Bin(ksft.Program)
	data, err := os.ReadFile(xmitcheck)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(prog, data, 0o755))
	for suite, want := range map[string]string{
		"nosuch": `no suite "nosuch" in this xmitcheck (the collection has tun, vhost)`,
		"tun":    "tun.test: no such file or directory: install the collection again",
	} {
		out, code := runProgram(t, prog, "kselftest", suite)
		assert.Check(t, is.Equal(code, ksftSkip), "%s: %s", suite, out)
		assert.Check(t, strings.HasPrefix(out, "KTAP version 1\n1..0 # SKIP "), out)
		assert.Check(t, is.Contains(out, want))
	}
}

// runProgram runs path with args as root in a scratch directory and
// returns its stdout and exit code.
func runProgram(t *testing.T, path string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s: %v", path, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}
