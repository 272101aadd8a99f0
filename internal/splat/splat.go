// Package splat recognises the line that starts a kernel report — a
// warning, BUG, oops, a sanitizer's (KCSAN, KASAN, UBSAN, lockdep,
// kmemleak), RCU stall, hung task or panic —
// so that the console watcher of the VMs (vmtest) and the kernel-log
// watcher of tests on a host kernel (internal/guest/kmsg) agree on what a splat is.
package splat

import "regexp"

// Kinds of report.
const (
	Warning = "WARNING"
	BUG     = "BUG"
	KASAN   = "KASAN"
	KCSAN   = "KCSAN"
	UBSAN   = "UBSAN"
	Lockdep = "lockdep"
	// Kmemleak is a leak the guest's scan after a test binary found
	// (vmtest/guest) and wrote to the kernel log: kmemleak keeps its
	// reports in debugfs.
	Kmemleak = "kmemleak"
	Panic    = "panic"
	RCUStall = "RCU stall"
	HungTask = "hung task"
)

// triggers start a report, first match wins.
var triggers = []struct {
	re   *regexp.Regexp
	kind string
}{
	{regexp.MustCompile(`^Kernel panic - not syncing`), Panic},
	// A WARN_ON: "WARNING: CPU: 0 PID: 1 at file:line func" or, since
	// 6.18, "WARNING: file:line at func, CPU#0: comm/pid".
	{regexp.MustCompile(`^WARNING: (CPU: \d+|\S+:\d+ at )`), Warning},
	// lockdep and RCU-lockdep headers: "WARNING: possible circular locking
	// dependency detected", "inconsistent lock state", "suspicious RCU
	// usage", "bad unlock balance detected!", ...
	{regexp.MustCompile(`^WARNING: .*(lock|RCU)`), Lockdep},
	{regexp.MustCompile(`^WARNING: `), Warning},
	{regexp.MustCompile(`^BUG: KASAN: `), KASAN},
	{regexp.MustCompile(`^BUG: KCSAN: `), KCSAN},
	{regexp.MustCompile(`^unreferenced object (\(\w+\) )?0x[0-9a-f]+ \(size \d+\):`), Kmemleak},
	{regexp.MustCompile(`^UBSAN: `), UBSAN},
	{regexp.MustCompile(`^(BUG: |kernel BUG at )`), BUG},
	{regexp.MustCompile(`^(rcu: )?INFO: rcu_\w+ (self-)?detected (stalls|stall)`), RCUStall},
	{regexp.MustCompile(`^INFO: task .* blocked for more than \d+ seconds`), HungTask},
	// An oops without a preceding BUG line (general protection faults).
	{regexp.MustCompile(`^(Oops: |general protection fault)`), BUG},
}

// Start returns the kind of report that the log line body (without its
// printk timestamp) starts, or "" when it starts none.
func Start(body string) string {
	for _, t := range triggers {
		if t.re.MatchString(body) {
			return t.kind
		}
	}
	return ""
}

// Sanitizer reports whether a report of kind comes from one of the
// kernel's sanitizers: a finding about the code it names, which judges
// only that code (a data race, a bad access, a lock order, a leak), not a
// failure of whatever ran.
func Sanitizer(kind string) bool {
	switch kind {
	case KASAN, KCSAN, UBSAN, Lockdep, Kmemleak:
		return true
	}
	return false
}
