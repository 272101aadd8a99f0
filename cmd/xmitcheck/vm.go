package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels"
)

// registerVM registers the flags every command that boots kernels shares:
// the runner's Options.
func registerVM(fs *flag.FlagSet, o *runner.Options) {
	fs.Var((*listFlag)(&o.Kernels), "kernel",
		"kernel to run on, repeatable: a catalog name, build:NAME, host or a path (default "+kernels.DefaultKernel+")")
	fs.StringVar(&o.Modules, "modules", "", "modules directory (lib/modules/V) of a kernel given as a bzImage path")
	fs.StringVar(&o.Backend, "backend", "native", "how to boot: native (qemu with xmitcheck as init) or vng (virtme-ng)")
	fs.StringVar(&o.Accel, "accel", "auto", "qemu acceleration: auto (KVM where it works, else TCG), kvm or tcg")
	fs.IntVar(&o.CPUs, "cpus", 2, "guest vCPUs")
	fs.IntVar(&o.MemoryMB, "memory", 1024, "guest memory in MiB")
	fs.DurationVar(&o.BootTimeout, "boot-timeout", 0,
		"longest wait from qemu start to the guest's first word (0: 60s native, 5m vng)")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 0,
		"longest time without any output before the run counts as hung (0: 2m)")
	fs.DurationVar(&o.Timeout, "timeout", 0, "longest time for one kernel's whole run (0: 30m)")
	fs.Var((*listFlag)(&o.Modprobe), "modprobe",
		"also load these modules and their dependencies in the guest (repeatable)")
	fs.StringVar(&o.Expect, "expect", "", "what every kernel must show, e.g. 000,003,004 or '!000' (docs/verdicts.md)")
}

// begin is the start of every command that boots kernels, once its own
// flags are parsed and checked: the VM flags checked, then what after
// checks (nil: nothing), then Ctrl-C and SIGTERM cancel ctx and the
// kernels are fetched. stop, never nil, ends the signal handling.
func begin(o *runner.Options, after func() error) (ctx context.Context, stop func(), ks []*kernels.Kernel,
	err error) {
	stop = func() {}
	if err := o.Check(); err != nil {
		return nil, stop, nil, err
	}
	if after != nil {
		if err := after(); err != nil {
			return nil, stop, nil, err
		}
	}
	ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ks, err = o.Resolve(ctx)
	return ctx, stop, ks, err
}
