package kmsg

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// Watch fails tb, at its cleanup, if the kernel logged a splat or gained a
// splat taint bit since Watch was called. Without /dev/kmsg (no devtmpfs)
// it logs why and watches the taint alone.
func Watch(tb testing.TB) {
	tb.Helper()
	profile.Begin(tb)
	before, err := taint()
	if err != nil {
		tb.Fatal(err)
	}
	fd, err := openLogEnd()
	if err != nil {
		tb.Logf("not watching the kernel log for splats, only the taint: %v", err)
		fd = -1
	}
	judged := os.Getenv(feature.JudgedEnv) != ""
	tb.Cleanup(func() {
		var let uint64
		if fd >= 0 {
			defer unix.Close(fd)
			splats := readSplats(fd)
			switch ok, taints := judgedApart(splats); {
			case judged && ok:
				tb.Logf("the kernel logged %d sanitizer report line(s) during the test, first: %q; "+
					"the judge decides by the code they name (docs/verdicts.md)", len(splats), splats[0])
				let = taints
			case len(splats) > 0:
				reported(tb, "the kernel logged %d splat line(s) during the test, first: %q", len(splats), splats[0])
			}
		}
		after, err := taint()
		if err != nil {
			tb.Error(err)
			return
		}
		if gained := after &^ before & splatTaints &^ let; gained != 0 {
			reported(tb, "kernel taint went from %#x to %#x (new %#x: a WARN, BUG, oops or lockup fired): "+
				"read the kernel log", before, after, gained)
		}
	})
}

// reported fails tb on a kernel report, with a record that says so: the
// judge reads the report the runner attached and what code it names.
func reported(tb testing.TB, format string, args ...any) {
	tb.Helper()
	tb.Log(feature.Record{Kernel: true, Why: fmt.Sprintf(format, args...)}.String())
	tb.Errorf(format, args...)
}

// openLogEnd opens /dev/kmsg positioned after its last record.
func openLogEnd() (int, error) {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /dev/kmsg: %w", err)
	}
	if _, err := unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("seek to the end of /dev/kmsg: %w", err)
	}
	return fd, nil
}

// readSplats reads the records logged since fd's position, one per read,
// until none is left, and returns the splats among them.
func readSplats(fd int) []string {
	buf := make([]byte, 8192)
	var splats []string
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EPIPE) { // records overwritten: keep reading
			continue
		}
		if err != nil || n <= 0 {
			return splats
		}
		if msg, ok := splatMessage(string(buf[:n])); ok {
			splats = append(splats, msg)
		}
	}
}

// taint returns /proc/sys/kernel/tainted.
func taint() (uint64, error) {
	b, err := os.ReadFile("/proc/sys/kernel/tainted")
	if err != nil {
		return 0, fmt.Errorf("read the kernel taint (mount /proc): %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse /proc/sys/kernel/tainted %q: %w", b, err)
	}
	return v, nil
}
