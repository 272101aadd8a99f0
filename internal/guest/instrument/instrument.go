// Package instrument makes the suites' BPF instruments account for what
// they lost. The kernel skips a tracing program (tracepoint, raw
// tracepoint, fentry/fexit, kprobe) on a CPU where a run of it is still
// under way, and counts the skip in the program's recursion misses: on
// PREEMPT_RT, where softirqs and NAPI run in threads that can be
// preempted, that happens. A counter that missed events cannot judge the
// kernel, so a test whose program missed any is an instrument fault: the
// judge calls its seed error, never BROKEN or present.
package instrument

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// Misses returns how many times the kernel skipped prog (0 on kernels
// before 5.12, which do not count).
func Misses(prog *ebpf.Program) (uint64, error) {
	st, err := prog.Stats()
	if err != nil {
		return 0, fmt.Errorf("read the recursion misses of %v: %w", prog, err)
	}
	return st.RecursionMisses, nil
}

// WatchMisses checks, when tb ends, that the kernel skipped prog (what
// says what it counts) no time since now; else tb ends as an instrument
// fault naming the count. Call it once prog is attached, after the
// cleanup that closes prog is registered, so that the check runs first.
func WatchMisses(tb testing.TB, what string, prog *ebpf.Program) {
	tb.Helper()
	before, err := Misses(prog)
	if err != nil {
		observe.Fault(tb, feature.Environment, "%s: %v", what, err)
	}
	tb.Cleanup(func() {
		after, err := Misses(prog)
		switch {
		case err != nil:
			observe.Lost(tb, "%s: %v", what, err)
		case after > before:
			observe.Lost(tb, "%s: the kernel skipped it %d times (recursion misses): its counts are short",
				what, after-before)
		}
	})
}
