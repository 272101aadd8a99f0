// Package kmsg fails a test when the kernel splats while it runs: a
// warning, bug, oops, lockup or stall. A transmit-path bug often shows
// only as a WARN_ON in the log while the counters still balance, so the
// suites watch both witnesses the kernel keeps:
//
//   - /dev/kmsg: new records matching splatMarks (read from the log's end
//     at the start, so older lines never count);
//   - /proc/sys/kernel/tainted: new splatTaints bits, which stay set even
//     when the log ring has overwritten the record.
package kmsg

import "strings"

// splatMarks are the kernel log texts that mean something went wrong in
// the kernel: a warning or bug, a lockup, an RCU or task stall, a stalled
// tx queue (dev_watchdog), or a stopped queue without a qdisc
// (__dev_queue_xmit's "asks to queue packet").
var splatMarks = []string{"WARNING:", "BUG:", "Oops", "soft lockup", "hard LOCKUP", "rcu_sched detected stall",
	"rcu: INFO", "NETDEV WATCHDOG", "asks to queue packet", "hung_task", "blocked for more than"}

// splatTaints are the taint bits a splat sets (include/linux/panic.h):
// TAINT_BAD_PAGE (5), TAINT_DIE (7), TAINT_WARN (9), TAINT_SOFTLOCKUP (14).
const splatTaints = 1<<5 | 1<<7 | 1<<9 | 1<<14

// splat returns the message of a /dev/kmsg record
// ("prio,seq,usec,flags;message\n") if it marks a splat.
func splat(record string) (string, bool) {
	msg := strings.TrimSpace(record[strings.IndexByte(record, ';')+1:])
	for _, m := range splatMarks {
		if strings.Contains(msg, m) {
			return msg, true
		}
	}
	return "", false
}
