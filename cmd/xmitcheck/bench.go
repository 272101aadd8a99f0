package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// cmdBench measures: boot-to-first-test (bench boot), or where the tests'
// time goes (bench profile).
func cmdBench(args []string) (int, error) {
	if len(args) > 0 && args[0] == "profile" {
		return benchProfile(args[1:])
	}
	if len(args) == 0 || args[0] != "boot" {
		about := "Measure boot-to-first-test (xmitcheck bench boot -h), or where each test's time goes\n" +
			"(xmitcheck bench profile -h)."
		if err := usageOnly("bench", "boot|profile [flags]", about, args); err != nil {
			return 0, err
		}
		return 0, usagef("bench: the benchmarks are `bench boot` and `bench profile`")
	}
	return exitOK, benchBoot(args[1:])
}

// benchBoot measures boot-to-first-test: qemu start to the first test
// binary's start, over several boots, per backend.
func benchBoot(args []string) error {
	fs := newFlags("bench boot", "[flags]",
		"Measure boot-to-first-test, qemu start to the first test binary's start,\n"+
			"over -n boots per kernel and backend.")
	var o runner.Options
	registerVM(fs, &o)
	n := fs.Int("n", 5, "boots per kernel and backend")
	both := fs.Bool("all-backends", false, "measure native and vng side by side")
	if err := parse(fs, args); err != nil {
		return err
	}
	ctx, stop, ks, err := begin(&o, nil)
	defer stop()
	if err != nil {
		return err
	}
	backends := []string{o.Backend}
	if *both {
		backends = []string{"native", "vng"}
	}
	dir, err := os.MkdirTemp("", "xmitcheck-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The first test binary starts and exits at once: what is measured is
	// the boot, module loading and the start of the first binary.
	src, err := runner.FindSuites(ctx, "")
	if err != nil {
		return err
	}
	bins, err := runner.BuildTests(ctx, src, dir, []string{"./suites/tun"}, []string{"-test.run=^$"})
	if err != nil {
		return err
	}
	init, err := runner.InitBinary(ctx, dir)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "kernel\tbackend\taccel\tmedian\tmin\tmax\ttotal\t")
	for _, k := range ks {
		for _, be := range backends {
			o.Backend = be
			if err := bootTimes(ctx, w, &o, k, o.NewBackend(k, init), bins, *n); err != nil {
				return err
			}
		}
	}
	return w.Flush()
}

// bootTimes boots k n times on b and writes the row of its times.
func bootTimes(ctx context.Context, w *tabwriter.Writer, o *runner.Options, k *kernels.Kernel, b vmtest.Backend,
	bins []vmtest.Binary, n int) error {
	var boots, totals []time.Duration
	accel := ""
	for artefacts := 0; len(boots) < n; {
		out, artefact, err := o.BootOnce(ctx, k, b, bins)
		// A boot the emulator killed (vmtest.Artefact) measured
		// nothing: boot again, as the runner does, a few times.
		if artefact && artefacts < 3 && ctx.Err() == nil {
			artefacts++
			fmt.Fprintf(os.Stderr, "xmitcheck: %s on %s: the TCG int3 artefact, the emulator's, killed a boot: "+
				"booting again\n", o.Backend, k.Label())
			continue
		}
		if err != nil {
			return fmt.Errorf("%s on %s: %w%s", o.Backend, k.Label(), err, consoleTail(out))
		}
		boots = append(boots, out.BootToFirstTest)
		totals = append(totals, out.Total)
		accel = out.Accel
	}
	slices.Sort(boots)
	fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%v\t%v\t%v\t\n", k.Label(), o.Backend, accel,
		median(boots).Round(10*time.Millisecond), boots[0].Round(10*time.Millisecond),
		boots[len(boots)-1].Round(10*time.Millisecond), median(totals).Round(10*time.Millisecond))
	w.Flush()
	return nil
}

// consoleTail is the end of a failed boot's console, for its error: what
// the kernel said last.
func consoleTail(out *vmtest.Outcome) string {
	if out == nil || len(out.Console) == 0 {
		return ""
	}
	return "; its console ended:\n  " + strings.Join(out.Console[max(0, len(out.Console)-12):], "\n  ")
}

// median returns the middle of d (d need not be sorted).
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchProfile runs the suites, or reads the events a run recorded, and
// prints where each test's time went: setup, traffic, waits, teardown and
// the rest (the guest's profile lines, internal/guest/profile).
func benchProfile(args []string) (int, error) {
	fs, s := suiteFlags("bench profile", "[flags] [PKG...]",
		"Run the suites (default ./suites/...) on each --kernel as run does, then print per suite and\n"+
			"test the seconds spent in setup, traffic, waits, teardown and other, the longest first.\n"+
			"With --from, read the events of an earlier `xmitcheck run --events FILE` instead.")
	from := fs.String("from", "", "read this events file (xmitcheck run --events) instead of running")
	subtests := fs.Int("subtests", 0, "also show this many of each test's longest subtests")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if *from != "" {
		f, err := os.Open(*from)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		runs, err := results.ReadEvents(f)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", *from, err)
		}
		results.WriteProfile(os.Stdout, runs, *subtests)
		return exitOK, nil
	}
	ctx, stop, ks, err := s.begin(fs, nil)
	defer stop()
	if err != nil {
		return 0, err
	}
	// A profile is of the tests alone: one VM, no other guest beside it,
	// unless --vms says otherwise.
	s.VMs = max(s.VMs, 1)
	runs, err := s.Exec(ctx, ks)
	if err != nil {
		return 0, err
	}
	fmt.Println()
	results.WriteProfile(os.Stdout, runs, *subtests)
	if ctx.Err() != nil {
		return exitInfra, ctx.Err()
	}
	return runExit(runs), nil
}
