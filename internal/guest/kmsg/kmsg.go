// Package kmsg fails a test when the kernel splats while it runs: a
// warning, bug, oops, lockup or stall. A transmit-path bug often shows
// only as a WARN_ON in the log while the counters still balance, so the
// suites watch both witnesses the kernel keeps:
//
//   - /dev/kmsg: new records that start a kernel report (internal/splat,
//     the same recognition as the VMs' console watcher) or carry one of
//     netMarks (read from the log's end at the start, so older lines never
//     count);
//   - /proc/sys/kernel/tainted: new splatTaints bits, which stay set even
//     when the log ring has overwritten the record.
package kmsg

import (
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/splat"
)

// netMarks are log texts that are no report of their own but mean the
// transmit path went wrong, or that a lockup detector fired: a stalled tx
// queue (dev_watchdog), a stopped queue without a qdisc (__dev_queue_xmit's
// "asks to queue packet"), a device whose references leaked
// (netdev_wait_allrefs' "unregister_netdevice: waiting for"), soft and hard
// lockups.
var netMarks = []string{
	"NETDEV WATCHDOG", "asks to queue packet", "unregister_netdevice: waiting for", "soft lockup", "hard LOCKUP",
}

// splatTaints are the taint bits a splat sets (include/linux/panic.h):
// TAINT_BAD_PAGE (5), TAINT_DIE (7), TAINT_WARN (9), TAINT_SOFTLOCKUP (14).
const splatTaints = 1<<5 | 1<<7 | 1<<9 | 1<<14

// taintBadPage is the taint bit a KASAN report sets (TAINT_BAD_PAGE).
const taintBadPage = 1 << 5

// judgedApart reports whether splats, the report lines of one test, are
// all sanitizers' (splat.Sanitizer), which a judge decides by the code
// they name: the runner attaches them to the test from the console, and
// one in no seed's code is noted, not failed. taints are the taint bits
// those reports set. Under plain go test, where no judge reads them, they
// fail the test as any splat does.
func judgedApart(splats []string) (ok bool, taints uint64) {
	if len(splats) == 0 {
		return false, 0
	}
	for _, s := range splats {
		kind := splat.Start(s)
		if !splat.Sanitizer(kind) {
			return false, 0
		}
		if kind == splat.KASAN {
			taints |= taintBadPage
		}
	}
	return true, taints
}

// splatMessage returns the message of a /dev/kmsg record
// ("prio,seq,usec,flags;message\n") if it marks a splat.
func splatMessage(record string) (string, bool) {
	msg, _, ok := splat.KmsgRecord(record)
	if !ok {
		return "", false
	}
	msg = strings.TrimSpace(msg)
	if splat.Start(msg) != "" {
		return msg, true
	}
	for _, m := range netMarks {
		if strings.Contains(msg, m) {
			return msg, true
		}
	}
	return "", false
}
