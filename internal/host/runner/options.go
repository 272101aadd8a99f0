package runner

import (
	"context"
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

// Options say which kernels a command boots and how: what every command
// that boots kernels shares (the CLI's --kernel, --backend, --cpus, …).
type Options struct {
	// Kernels are the kernels' names: catalog names, build:NAME, host or
	// paths (Check fills in kernels.DefaultKernel when there is none).
	Kernels []string
	// Modules is the modules directory of a kernel given as a bzImage.
	Modules  string
	Backend  string // native or vng
	Accel    string // auto, kvm or tcg
	CPUs     int
	MemoryMB int
	// The guest's timeouts (0: vmtest's defaults).
	BootTimeout, IdleTimeout, Timeout time.Duration
	// Expect is what every kernel must show (--expect).
	Expect string
	// Modprobe are modules the guest loads besides kernels.GuestModules.
	Modprobe []string
	// ExpectFor, when set, holds a kernel's own Expect (compare).
	ExpectFor map[string]string
	// Only makes Expect the whole expectation (bisect).
	Only bool
	// VMs is how many VMs of a kernel run its test binaries at once
	// (lanes.go); 0 until a command picks its default.
	VMs int
	// SuitesRev is which source the suites were built from (Binaries sets
	// it): every run records it, with this xmitcheck's version.
	SuitesRev string
	// Env is added to the tests' environment (the cost pass's rounds).
	Env []string
	// Test2JSON is the test2json program that reads the test binaries'
	// output ("": go tool test2json; an installed collection's own).
	Test2JSON string
}

// Check makes sure the options make sense and that what the run needs is
// there, before any kernel is fetched.
func (o *Options) Check() error {
	switch o.Backend {
	case "native", "vng":
	default:
		return Usagef("--backend %q: use native or vng", o.Backend)
	}
	switch o.Accel {
	case "auto", "kvm", "tcg":
	default:
		return Usagef("--accel %q: use auto, kvm or tcg", o.Accel)
	}
	if len(o.Kernels) == 0 {
		o.Kernels = []string{kernels.DefaultKernel}
	}
	for _, spec := range append([]string{o.Expect}, slices.Collect(maps.Values(o.ExpectFor))...) {
		if _, err := expect.Parse(spec); err != nil {
			return Usagef("--expect: %v", err)
		}
	}
	// What the run needs is checked before any kernel is fetched.
	for _, name := range o.Kernels {
		if name == "host" {
			if os.Geteuid() != 0 {
				return fmt.Errorf("--kernel host runs the suites on this machine and needs root: run as root, or use --kernel %s",
					kernels.DefaultKernel)
			}
			continue
		}
		tool, hint := "qemu-system-x86_64", "install Debian's qemu-system-x86"
		if o.Backend == "vng" {
			if err := kernels.CheckVng(name); err != nil {
				return Usagef("%v", err)
			}
			tool, hint = "vng", "or use --backend native"
		}
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: run `make deps` (scripts/deps.sh), %s", tool, hint)
		}
	}
	return nil
}

// Resolve fetches (when needed) every kernel asked for, before anything
// boots, so a bad name fails fast.
func (o *Options) Resolve(ctx context.Context) ([]*kernels.Kernel, error) {
	var ks []*kernels.Kernel
	for _, name := range o.Kernels {
		k, err := kernels.Resolve(ctx, name, kernels.Options{Modules: o.Modules, Progress: Progress()})
		if err != nil {
			return nil, err
		}
		if why, modules := o.missingModules(k); why != "" {
			if modules == "" {
				modules = "DIR (its lib/modules/" + k.Release + ")"
			}
			fmt.Fprintf(Progress(), "xmitcheck: warning: %s, and no --modules came with it: the tests that need "+
				"them will be error, not judged; give --modules %s\n", why, modules)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// missingModules says which modules the guest of k would load and cannot,
// k being a path kernel given without its modules (kernels.MissingModules),
// and where such modules are, if the cache has them.
func (o *Options) missingModules(k *kernels.Kernel) (why, modules string) {
	return kernels.MissingModules(k, append(slices.Clone(kernels.GuestModules), o.Modprobe...))
}

// Expectation is what k must show, where that comes from, and the seeds
// Expect names, which must each get a verdict. Expect replaces what the
// expectation file (or the reference kernel) says of what it names; with
// Only (bisect) it is the whole question, with the known issues the kernel
// may show.
func (o *Options) Expectation(k *kernels.Kernel) (expect.Expectation, string, []feature.Seed, error) {
	e, source, err := expect.Of(k)
	if err != nil {
		return e, "", nil, err
	}
	spec := o.Expect
	if s := o.ExpectFor[k.Name]; s != "" {
		spec = s
	}
	if spec == "" {
		return e, source, nil, nil
	}
	x, err := expect.Parse(spec)
	if err != nil {
		return e, "", nil, err
	}
	var named []feature.Seed
	for _, s := range feature.Seeds {
		if _, ok := x.Seeds[s.Seed]; ok {
			named = append(named, s.Seed)
		}
	}
	if o.Only {
		x.Known = expect.Expectation{Known: e.Known}.Override(x).Known
		return x, "--expect " + spec + " (and the known issues of " + source + ")", named, nil
	}
	return e.Override(x), "--expect " + spec + " over " + source, named, nil
}

// job returns a job for bins with the options' sizes and timeouts; judged
// says whether a judge reads the tests' records (run, not exec).
func (o *Options) job(k *kernels.Kernel, bins []vmtest.Binary, judged bool) vmtest.Job {
	return vmtest.Job{
		Binaries: bins,
		Modules:  append(slices.Clone(kernels.GuestModules), o.Modprobe...),
		Env:      append(guestEnv(k, judged), o.Env...),
		Timeouts: vmtest.Timeouts{Boot: o.BootTimeout, Idle: o.IdleTimeout, Overall: o.Timeout},
		Accel:    o.Accel,
		CPUs:     o.CPUs,
		MemoryMB: o.MemoryMB,
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

// NewBackend returns the backend that runs on k: the host itself for the
// running kernel, else the chosen VM backend (Check has made sure its tools
// are there). init is the static xmitcheck the native backend boots as PID 1.
func (o *Options) NewBackend(k *kernels.Kernel, init string) vmtest.Backend {
	switch {
	case k.Host:
		return vmtest.Host{}
	case o.Backend == "vng":
		return vmtest.NewVng(vmtest.VngOptions{Init: init})
	}
	return vmtest.NewNative(vmtest.NativeOptions{Init: init})
}

// Progress is where long steps report, one line each: stderr, terminal or
// not (CI logs want them too).
func Progress() io.Writer { return os.Stderr }

// UsageError is bad input from the user.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// Usagef formats a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Sprintf(format, args...)}
}
