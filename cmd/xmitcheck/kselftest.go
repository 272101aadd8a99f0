package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
	"github.com/xmitcheck/xmitcheck/internal/host/ksft"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
	"golang.org/x/sys/unix"
)

// kselftest.h's exit codes; 2 (XFAIL) and 3 (XPASS) are never ours.
const (
	ksftPass = 0
	ksftFail = 1
	ksftSkip = 4
)

// Margins inside the runner's timeout: the test binary's own (go test
// -timeout: a hung test panics with every goroutine's stack) ends first,
// then ours, so the KTAP is printed before the runner kills the program;
// a timeout under a minute keeps a half and three quarters of it.
const (
	binaryMargin = 30 * time.Second
	runMargin    = 15 * time.Second
)

const kselftestAbout = `Run one suite of an installed kselftest collection on the running kernel, as the kernel's
runner does through the collection's SUITE program: load the modules it needs, run its test
binary, judge the seeds as xmitcheck run does and print KTAP. Exit 0 pass, 1 fail, 4 skip.
The expectation is the collection's line for the kernel (XMITCHECK_KERNEL names it, else its
release does), over which --expect, XMITCHECK_EXPECT or the collection's expect file says more.`

// cmdKselftest is `xmitcheck kselftest SUITE [flags]`, an installed
// collection's test program (ksft): it returns kselftest's exit code, and
// a usage error is a failure (exit 2 would be an XFAIL).
func cmdKselftest(args []string) int {
	fs := newFlags("kselftest", "SUITE [flags]", kselftestAbout)
	runRE := fs.String("run", "", "run only tests matching this regexp (go test -run)")
	skipRE := fs.String("skip", "", "do not run tests matching this regexp (go test -skip)")
	spec := fs.String("expect", "", "what the kernel must show, over the collection's expectation (docs/verdicts.md)")
	verbose := fs.Bool("v", false, "print the tests' output as they run, on stderr")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if err := parse(fs, args); err != nil {
			return kselftestUsage(err)
		}
		return kselftestUsage(usagef("kselftest: name the suite first (tun, vhost, qdisc, devmap)"))
	}
	suite := args[0]
	if err := parse(fs, args[1:]); err != nil {
		return kselftestUsage(err)
	}
	if fs.NArg() > 0 {
		return kselftestUsage(usagef("kselftest: one suite, then flags: %q is neither", fs.Arg(0)))
	}
	self, err := os.Executable()
	if err != nil {
		return kselftestUsage(err)
	}
	tree := ksft.FromProgram(self)
	k := ksftKernel()
	e, source, named, err := ksftExpectation(tree, k, suite, cmp.Or(*spec, os.Getenv("XMITCHECK_EXPECT")))
	if err != nil {
		return kselftestUsage(err)
	}
	notes, why, unmount := ksftPrepare(tree, k, suite)
	defer unmount()
	if why != "" {
		fmt.Printf("KTAP version 1\n1..0 # SKIP %s\n", why)
		for _, n := range notes {
			fmt.Println("# " + n)
		}
		return ksftSkip
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	timeout := ksftTimeout(tree)
	bin := ksftBinary(tree, suite, timeout, map[string]string{"run": *runRE, "skip": *skipRE})
	o := &runner.Options{Timeout: max(timeout-runMargin, timeout*3/4), Test2JSON: tree.Bin(ksft.Test2JSON)}
	var out io.Writer
	if *verbose {
		out = os.Stderr
	}
	run, errs, err := o.RunLane(ctx, k, vmtest.Host{}, []vmtest.Binary{bin}, out, time.Now())
	if err != nil {
		fmt.Fprintln(os.Stderr, "xmitcheck:", err)
		return ksftFail
	}
	run.Name = k.Name
	for _, n := range notes {
		run.Note(n)
	}
	runner.Judge(ctx, run, errs, e, source, named...)
	return ksftReport(run, k, suite)
}

// ksftBinary is the suite's test binary in tree, its own timeout inside
// the runner's, with go test's flags (run, skip) that are set.
func ksftBinary(tree ksft.Tree, suite string, timeout time.Duration, flags map[string]string) vmtest.Binary {
	bin := vmtest.Binary{Name: runner.Module + "/suites/" + suite, Path: tree.TestBinary(suite), Args: []string{
		"-test.v=test2json", "-test.count=1", "-test.timeout=" + max(timeout-binaryMargin, timeout/2).String()}}
	for flag, re := range flags {
		if re != "" {
			bin.Args = append(bin.Args, "-test."+flag+"="+re)
		}
	}
	return bin
}

// kselftestUsage prints a usage error and fails the test.
func kselftestUsage(err error) int {
	if errors.Is(err, errHelp) {
		return ksftPass
	}
	fmt.Fprintln(os.Stderr, "xmitcheck:", err)
	return ksftFail
}

// ksftKernel is the running kernel, its name still unknown.
func ksftKernel() *kernels.Kernel {
	var u unix.Utsname
	unix.Uname(&u)
	return &kernels.Kernel{Release: unix.ByteSliceToString(u.Release[:]), Host: true}
}

// ksftExpectation is what k must show, from the collection's copy of the
// expectation file: the line XMITCHECK_KERNEL names, else the catalog
// kernel of k's release, else none (as for --kernel host); spec (or the
// collection's expect file) is over it as --expect is over
// kernels/expectations. It names k by the line it took ("host" for none);
// named are the seeds spec names that the suite tests: each must get a
// verdict.
func ksftExpectation(tree ksft.Tree, k *kernels.Kernel, suite string, spec string) (
	expect.Expectation, string, []feature.Seed, error) {
	file := tree.Path(ksft.ExpectationsFile)
	text, err := os.ReadFile(file)
	if err != nil {
		return expect.Expectation{}, "", nil, fmt.Errorf("%w: install the collection again (xmitcheck suites install)", err)
	}
	e, source, took, err := expect.Running(string(text), file, os.Getenv("XMITCHECK_KERNEL"), k.Release)
	if err != nil {
		return e, "", nil, err
	}
	k.Name = cmp.Or(took, "host")
	if spec == "" {
		data, _ := os.ReadFile(tree.Path(ksft.ExpectFile))
		spec = strings.TrimSpace(string(data))
	}
	if spec == "" {
		return e, source, nil, nil
	}
	o, err := expect.Parse(spec)
	if err != nil {
		return e, "", nil, usagef("--expect (or XMITCHECK_EXPECT, or %s): %v", tree.Path(ksft.ExpectFile), err)
	}
	var named []feature.Seed
	for _, s := range feature.SuiteSeeds(suite) {
		if _, ok := o.Seeds[s]; ok {
			named = append(named, s)
		}
	}
	return e.Override(o), "--expect " + spec + " over " + source, named, nil
}

// ksftPrepare checks what the suite needs on this machine and readies it:
// root, the collection's binaries, the pseudo filesystems, the modules.
// notes say what it found and did; why, when set, is why the suite is
// skipped.
func ksftPrepare(tree ksft.Tree, k *kernels.Kernel, suite string) (notes []string, why string, unmount func()) {
	unmount = func() {}
	mods, ok := kernels.SuiteModules[suite]
	if !ok {
		suites, _ := tree.Suites()
		return nil, fmt.Sprintf("no suite %q in this xmitcheck (the collection has %s)", suite, strings.Join(suites, ", ")),
			unmount
	}
	if os.Geteuid() != 0 {
		return nil, "not root: the suites need CAP_NET_ADMIN and CAP_BPF (run the collection as root)", unmount
	}
	for _, f := range []string{tree.TestBinary(suite), tree.Bin(ksft.Test2JSON)} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Sprintf("%v: install the collection again (xmitcheck suites install)", err), unmount
		}
	}
	notes, unmount = ksft.MountMissing()
	loaded := ksft.Running(k.Release).LoadModules(mods)
	for _, m := range loaded {
		notes = append(notes, m.Line())
	}
	if bad := ksft.Unloadable(loaded); len(bad) > 0 {
		return notes, "the kernel builds modules the suite needs that cannot be loaded here: " + strings.Join(bad, "; "),
			unmount
	}
	return notes, "", unmount
}

// ksftTimeout is the runner's timeout for the test (kselftest_timeout, which
// the runner exports from the collection's settings or -o), else the
// settings' own, else ksft.Timeout.
func ksftTimeout(tree ksft.Tree) time.Duration {
	secs, _ := strconv.Atoi(os.Getenv("kselftest_timeout"))
	if secs <= 0 {
		secs = cmp.Or(tree.SettingsTimeout(), ksft.Timeout)
	}
	return time.Duration(secs) * time.Second
}

// ksftReport prints the summary and the verdicts on stderr, the KTAP on
// stdout, writes the lab results when asked (ksft.ResultsEnv), and returns
// the exit code (ksftCode).
func ksftReport(run *results.Run, k *kernels.Kernel, suite string) int {
	results.WriteSummary(os.Stderr, []*results.Run{run})
	results.WriteVerdicts(os.Stderr, []*results.Run{run})
	code := ksftCode(run)
	if code == ksftSkip {
		run.Note("SKIP: every seed suites/" + suite + " judged is absent on this kernel, or it judged none")
	}
	if err := results.WriteKselftest(os.Stdout, run); err != nil {
		fmt.Fprintln(os.Stderr, "xmitcheck:", err)
		return ksftFail
	}
	if dir := os.Getenv(ksft.ResultsEnv); dir != "" {
		name := k.Name
		if name == "host" {
			name = ""
		}
		err := runner.WriteTo(filepath.Join(dir, suite+".results"), func(w io.Writer) error {
			return ksft.WriteLabResults(w, suite, name, k.Release, run)
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "xmitcheck: %s: %v\n", ksft.ResultsEnv, err)
			return ksftFail
		}
	}
	return code
}

// ksftCode is the test's exit code: a failed test, a verdict that differs
// from its expectation or a run that could not finish fail; a run whose
// every seed is absent, as far as nothing fails, is a skip (the kernel
// lacks what the suite tests); anything else passes.
func ksftCode(run *results.Run) int {
	switch {
	case run.Err != nil || run.Failed() || run.Mismatched():
		return ksftFail
	case !slices.ContainsFunc(run.Verdicts, func(v results.Verdict) bool { return v.State != results.Absent }):
		return ksftSkip
	}
	return ksftPass
}
