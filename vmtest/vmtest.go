// Package vmtest boots a kernel, runs compiled Go test binaries inside it
// and streams their output back to the host.
//
// The host owns time: every run has a boot timeout, a no-output timeout and
// an overall deadline. A kernel that panics, hangs or oopses is reported as
// such, with the console lines that show it, and never leaves qemu running.
//
// vmtest knows nothing about which suites exist; it runs what it is given.
package vmtest

import (
	"context"
	"time"

	"github.com/xmitcheck/xmitcheck/kernels"
)

// Binary is one compiled test binary (go test -c) to run in the guest.
type Binary struct {
	// Name labels the binary's output, usually the package import path.
	Name string
	// Path is the executable on the host.
	Path string
	// Args are passed to the binary, e.g. -test.v=test2json -test.run=X.
	Args []string
	// Sources are the package's source files (absolute paths), put at the
	// same paths in the native guest, where gotest.tools reads a failed
	// assertion's expression from them.
	Sources []string
}

// Timeouts bound every phase of a run. Zero means the default.
type Timeouts struct {
	// Boot bounds qemu start to the guest init's first message.
	Boot time.Duration
	// Idle bounds the time without any output, console or test.
	Idle time.Duration
	// Overall bounds the whole run.
	Overall time.Duration
}

// Job is what a backend runs on one kernel.
type Job struct {
	Binaries []Binary
	// Modules are loaded (with their dependencies) before the binaries run.
	// A module the kernel lacks is not an error: tests probe and skip.
	Modules []string
	// Env is added to the binaries' environment ("KEY=value"); the CLI sets
	// XMITCHECK_KERNEL to the catalog name so tests know their expectations.
	Env      []string
	Timeouts Timeouts
	// Accel is "auto", "kvm" or "tcg".
	Accel string
	// SingleThreadTCG runs every vCPU on one host thread, in turn, when the
	// guest runs under TCG. Multi-threaded TCG (the default) can let one
	// vCPU run text that another has just live-patched (an int3 the patch
	// already took out, splat.StaleInt3); one thread cannot, at the cost
	// of parallel vCPUs and about a fifth more time.
	SingleThreadTCG bool
	// CPUs and MemoryMB size the guest; zero means 2 and 1024.
	CPUs     int
	MemoryMB int
}

// Sink receives everything a run produces, as it happens. Calls are made
// from one goroutine at a time.
type Sink interface {
	// Start is called when a binary starts.
	Start(b Binary)
	// Output carries the binary's stdout and stderr, in order.
	Output(b Binary, p []byte)
	// Exit is called when a binary exits, with its exit code.
	Exit(b Binary, code int)
	// Splat reports a kernel warning, oops or panic seen on the console.
	Splat(s Splat)
}

// Splat is a kernel report seen on the console.
type Splat struct {
	// Kind is the trigger: "WARNING", "BUG", "KASAN", "UBSAN", "lockdep",
	// "panic", "RCU stall", "hung task".
	Kind string
	// Lines are the report's console lines.
	Lines []string
	// Binary and Test are where the report started, by the marks in the
	// kernel log (feature.Mark): the test whose window held it, and the
	// binary that was running, or had run last (Exited). Binary is empty
	// before any binary started; Test outside every test's window.
	Binary, Test string
	Exited       bool
}

// Where says where the report started, beside its test or binary.
func (s Splat) Where() string {
	switch {
	case s.Binary == "" || s.Test != "":
		return ""
	case s.Exited:
		return "after the binary exited"
	}
	return "outside its tests"
}

// Outcome summarises one run.
type Outcome struct {
	// BootToFirstTest is qemu start to the first binary's start.
	BootToFirstTest time.Duration
	// Total is qemu start to exit.
	Total time.Duration
	// Accel is the accelerator that was used.
	Accel string
	// Console holds the last console lines, for reports.
	Console []string
	// Modules maps each module the job asked for (and the transport's) to
	// "" when it loaded, or to why it did not; a module the kernel has no
	// file for is listed too (built in, or absent: the tests probe).
	Modules map[string]string
}

// Backend boots kernels and runs jobs in them.
type Backend interface {
	Name() string
	// Run runs job on k. It returns an error wrapping ErrCrash when the
	// kernel panicked, hung or missed a deadline, and another error when the
	// run could not start.
	Run(ctx context.Context, k *kernels.Kernel, job Job, sink Sink) (*Outcome, error)
}
