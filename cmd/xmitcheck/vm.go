package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// vmFlags are the flags every command that boots kernels shares.
type vmFlags struct {
	kernels  listFlag
	modules  string
	backend  string
	accel    string
	cpus     int
	memoryMB int
	boot     time.Duration
	idle     time.Duration
	overall  time.Duration
	expect   string
	modprobe listFlag
	// expectFor, when set, holds a kernel's own --expect (compare).
	expectFor map[string]string
	// only makes --expect the whole expectation (bisect).
	only bool
	// vms is how many VMs of a kernel run its test binaries at once
	// (lanes.go); 0 until a command picks its default.
	vms int
	// suitesRev is which source the suites were built from (set once they
	// are): every run records it, with this xmitcheck's version.
	suitesRev string
	// env is added to the tests' environment (the cost pass's rounds).
	env []string
	// test2json is the test2json program that reads the test binaries'
	// output ("": go tool test2json; an installed collection's own).
	test2json string
}

func (v *vmFlags) register(fs *flag.FlagSet) {
	fs.Var(&v.kernels, "kernel",
		"kernel to run on, repeatable: a catalog name, build:NAME, host or a path (default "+kernels.DefaultKernel+")")
	fs.StringVar(&v.modules, "modules", "", "modules directory (lib/modules/V) of a kernel given as a bzImage path")
	fs.StringVar(&v.backend, "backend", "native", "how to boot: native (qemu with xmitcheck as init) or vng (virtme-ng)")
	fs.StringVar(&v.accel, "accel", "auto", "qemu acceleration: auto (KVM where it works, else TCG), kvm or tcg")
	fs.IntVar(&v.cpus, "cpus", 2, "guest vCPUs")
	fs.IntVar(&v.memoryMB, "memory", 1024, "guest memory in MiB")
	fs.DurationVar(&v.boot, "boot-timeout", 0,
		"longest wait from qemu start to the guest's first word (0: 60s native, 5m vng)")
	fs.DurationVar(&v.idle, "idle-timeout", 0, "longest time without any output before the run counts as hung (0: 2m)")
	fs.DurationVar(&v.overall, "timeout", 0, "longest time for one kernel's whole run (0: 30m)")
	fs.Var(&v.modprobe, "modprobe", "also load these modules and their dependencies in the guest (repeatable)")
	fs.StringVar(&v.expect, "expect", "", "what every kernel must show, e.g. 000,003,004 or '!000' (docs/verdicts.md)")
}

func (v *vmFlags) check() error {
	switch v.backend {
	case "native", "vng":
	default:
		return usagef("--backend %q: use native or vng", v.backend)
	}
	switch v.accel {
	case "auto", "kvm", "tcg":
	default:
		return usagef("--accel %q: use auto, kvm or tcg", v.accel)
	}
	if len(v.kernels) == 0 {
		v.kernels = listFlag{kernels.DefaultKernel}
	}
	for _, spec := range append([]string{v.expect}, slices.Collect(maps.Values(v.expectFor))...) {
		if _, err := expect.Parse(spec); err != nil {
			return usagef("--expect: %v", err)
		}
	}
	// What the run needs is checked before any kernel is fetched.
	for _, name := range v.kernels {
		if name == "host" {
			if os.Geteuid() != 0 {
				return fmt.Errorf("--kernel host runs the suites on this machine and needs root: run as root, or use --kernel %s",
					kernels.DefaultKernel)
			}
			continue
		}
		tool, hint := "qemu-system-x86_64", "install Debian's qemu-system-x86"
		if v.backend == "vng" {
			if err := kernels.CheckVng(name); err != nil {
				return usagef("%v", err)
			}
			tool, hint = "vng", "or use --backend native"
		}
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: run `make deps` (scripts/deps.sh), %s", tool, hint)
		}
	}
	return nil
}

// resolve fetches (when needed) every kernel asked for, before anything
// boots, so a bad name fails fast.
func (v *vmFlags) resolve(ctx context.Context) ([]*kernels.Kernel, error) {
	var ks []*kernels.Kernel
	for _, name := range v.kernels {
		k, err := kernels.Resolve(ctx, name, kernels.Options{Modules: v.modules, Progress: progress()})
		if err != nil {
			return nil, err
		}
		if why, modules := v.missingModules(k); why != "" {
			if modules == "" {
				modules = "DIR (its lib/modules/" + k.Release + ")"
			}
			fmt.Fprintf(progress(), "xmitcheck: warning: %s, and no --modules came with it: the tests that need "+
				"them will be error, not judged; give --modules %s\n", why, modules)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// missingModules says which modules the guest of k would load and cannot,
// k being a path kernel given without its modules (kernels.MissingModules),
// and where such modules are, if the cache has them.
func (v *vmFlags) missingModules(k *kernels.Kernel) (why, modules string) {
	return kernels.MissingModules(k, append(slices.Clone(kernels.GuestModules), v.modprobe...))
}

// expectation is what k must show, where that comes from, and the seeds
// --expect names, which must each get a verdict. --expect replaces what the
// expectation file (or the reference kernel) says of what it names; with
// only (bisect) it is the whole question, with the known issues the kernel
// may show.
func (v *vmFlags) expectation(k *kernels.Kernel) (expect.Expectation, string, []feature.Seed, error) {
	e, source, err := expect.Of(k)
	if err != nil {
		return e, "", nil, err
	}
	spec := v.expect
	if s := v.expectFor[k.Name]; s != "" {
		spec = s
	}
	if spec == "" {
		return e, source, nil, nil
	}
	o, err := expect.Parse(spec)
	if err != nil {
		return e, "", nil, err
	}
	var named []feature.Seed
	for _, s := range feature.Seeds {
		if _, ok := o.Seeds[s.Seed]; ok {
			named = append(named, s.Seed)
		}
	}
	if v.only {
		o.Known = expect.Expectation{Known: e.Known}.Override(o).Known
		return o, "--expect " + spec + " (and the known issues of " + source + ")", named, nil
	}
	return e.Override(o), "--expect " + spec + " over " + source, named, nil
}

// job returns a job for bins with the flags' sizes and timeouts; judged
// says whether a judge reads the tests' records (run, not exec).
func (v *vmFlags) job(k *kernels.Kernel, bins []vmtest.Binary, judged bool) vmtest.Job {
	return vmtest.Job{
		Binaries: bins,
		Modules:  append(slices.Clone(kernels.GuestModules), v.modprobe...),
		Env:      append(guestEnv(k, judged), v.env...),
		Timeouts: vmtest.Timeouts{Boot: v.boot, Idle: v.idle, Overall: v.overall},
		Accel:    v.accel,
		CPUs:     v.cpus,
		MemoryMB: v.memoryMB,
	}
}

// guestEnv is the tests' environment in the guest: the kernel's name, the
// judge's mark (feature.JudgedEnv) and every other XMITCHECK_* variable of
// the caller, so knobs reach tests as they would under plain go test. What
// the kernel is expected to show stays on the host, with the judge.
func guestEnv(k *kernels.Kernel, judged bool) []string {
	env := []string{"XMITCHECK_KERNEL=" + k.Name}
	if judged {
		env = append(env, feature.JudgedEnv+"=1")
	}
	for _, kv := range os.Environ() {
		ours := strings.HasPrefix(kv, "XMITCHECK_KERNEL=") || strings.HasPrefix(kv, feature.JudgedEnv+"=")
		if strings.HasPrefix(kv, "XMITCHECK_") && !ours {
			env = append(env, kv)
		}
	}
	return env
}

// newBackend returns the backend that runs on k: the host itself for the
// running kernel, else the chosen VM backend (check has made sure its tools
// are there). init is the static xmitcheck the native backend boots as PID 1.
func (v *vmFlags) newBackend(k *kernels.Kernel, init string) vmtest.Backend {
	switch {
	case k.Host:
		return vmtest.Host{}
	case v.backend == "vng":
		return vmtest.NewVng(vmtest.VngOptions{Init: init})
	}
	return vmtest.NewNative(vmtest.NativeOptions{Init: init})
}

// progress is where long steps report, one line each: stderr, terminal or
// not (CI logs want them too).
func progress() io.Writer { return os.Stderr }
