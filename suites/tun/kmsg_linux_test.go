package tun

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// splatMarks are the kernel log lines that mean something went wrong in
// the kernel: a warning or bug, a lockup, a stalled tx queue, or a stopped
// queue without a qdisc.
var splatMarks = []string{"WARNING:", "BUG:", "Oops", "soft lockup", "hard LOCKUP", "rcu_sched detected stall",
	"rcu: INFO", "NETDEV WATCHDOG", "asks to queue packet", "hung_task", "blocked for more than"}

// watchKmsg fails t at cleanup when the kernel logged a splat while t ran.
// It reads /dev/kmsg from its end at the start, so older lines never count.
func watchKmsg(t testing.TB) {
	t.Helper()
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Logf("not watching the kernel log for splats: open /dev/kmsg: %v", err)
		return
	}
	if _, err := unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		unix.Close(fd)
		t.Logf("not watching the kernel log for splats: seek /dev/kmsg: %v", err)
		return
	}
	t.Cleanup(func() {
		defer unix.Close(fd)
		buf := make([]byte, 8192)
		var splats []string
		for {
			n, err := unix.Read(fd, buf)
			if errors.Is(err, unix.EPIPE) { // records overwritten: keep reading
				continue
			}
			if err != nil || n <= 0 {
				break
			}
			rec := string(buf[:n])
			msg := rec[strings.IndexByte(rec, ';')+1:]
			for _, m := range splatMarks {
				if strings.Contains(msg, m) {
					splats = append(splats, strings.TrimSpace(msg))
					break
				}
			}
		}
		if len(splats) > 0 {
			t.Errorf("the kernel logged %d splat line(s) during the test, first: %q", len(splats), splats[0])
		}
	})
}
