package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// cmdBench measures boot-to-first-test: qemu start to the first test
// binary's start, over several boots, per backend.
func cmdBench(args []string) error {
	if len(args) == 0 || args[0] != "boot" {
		about := "Measure boot-to-first-test (xmitcheck bench boot -h)."
		if err := usageOnly("bench", "boot [flags]", about, args); err != nil {
			return err
		}
		return usagef("bench: the only benchmark is `bench boot`")
	}
	fs := newFlags("bench boot", "[flags]",
		"Measure boot-to-first-test, qemu start to the first test binary's start,\n"+
			"over -n boots per kernel and backend.")
	var v vmFlags
	v.register(fs)
	n := fs.Int("n", 5, "boots per kernel and backend")
	both := fs.Bool("all-backends", false, "measure native and vng side by side")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if err := v.check(); err != nil {
		return err
	}
	backends := []string{v.backend}
	if *both {
		backends = []string{"native", "vng"}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ks, err := v.resolve(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "xmitcheck-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The first test binary starts and exits at once: what is measured is
	// the boot, module loading and the start of the first binary.
	src, err := findSuites(ctx, "")
	if err != nil {
		return err
	}
	bins, err := buildTests(ctx, src, dir, []string{"./suites/tun"}, []string{"-test.run=^$"})
	if err != nil {
		return err
	}
	init, err := initBinary(ctx, dir)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "kernel\tbackend\taccel\tmedian\tmin\tmax\ttotal\t")
	for _, k := range ks {
		for _, be := range backends {
			v.backend = be
			b := v.newBackend(k, init)
			var boots, totals []time.Duration
			accel := ""
			for range *n {
				s := &resultSink{run: results.NewRun(k.Label())}
				out, err := b.Run(ctx, k, v.job(k, bins, false), s)
				if err != nil {
					return fmt.Errorf("%s on %s: %w", be, k.Label(), err)
				}
				boots = append(boots, out.BootToFirstTest)
				totals = append(totals, out.Total)
				accel = out.Accel
			}
			slices.Sort(boots)
			fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%v\t%v\t%v\t\n", k.Label(), be, accel,
				median(boots).Round(10*time.Millisecond), boots[0].Round(10*time.Millisecond),
				boots[len(boots)-1].Round(10*time.Millisecond), median(totals).Round(10*time.Millisecond))
			w.Flush()
		}
	}
	return w.Flush()
}

// median returns the middle of d (d need not be sorted).
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
