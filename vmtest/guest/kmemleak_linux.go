package guest

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"
)

// kmemleakFile is kmemleak's debugfs file: only a kernel built with it
// (kernels build --debug kmemleak) has one.
const kmemleakFile = "/sys/kernel/debug/kmemleak"

const (
	// kmemleakAge is how long kmemleak leaves a new object alone before
	// it may call it unreferenced (MSECS_MIN_AGE, mm/kmemleak.c): the
	// scan after a binary waits that long, so that what the binary
	// allocated last is judged with it, not charged to the next binary.
	kmemleakAge = 5 * time.Second
	// kmemleakScanBound bounds one scan: the runner goes on without it
	// (and says so) rather than wait for the host's idle timeout.
	kmemleakScanBound = 50 * time.Second
)

// scanLeaks asks kmemleak, if the kernel has it, for the objects nothing
// references any more, as netdev's CI does after each test: each report
// goes to the kernel log, where the console watcher gives it to the window
// it lands in (the binary that just exited; before the first binary, none),
// and is then cleared, so the next scan reports only new ones. It scans
// twice: kmemleak reports an object only once its content stayed the same
// across a scan (its checksum). after is when the work to judge ended.
func scanLeaks(after time.Time) {
	if _, err := os.Stat(kmemleakFile); err != nil {
		return
	}
	time.Sleep(time.Until(after.Add(kmemleakAge)))
	start := time.Now()
	for range 2 {
		if err := kmemleakWrite("scan"); err != nil {
			kmsgLine(fmt.Sprintf("xmitcheck guest: kmemleak: %v", err))
			return
		}
	}
	data, err := os.ReadFile(kmemleakFile)
	if err != nil {
		kmsgLine(fmt.Sprintf("xmitcheck guest: kmemleak: read %s: %v", kmemleakFile, err))
		return
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "unreferenced object") {
			n++
		}
		kmsgLine(sc.Text())
	}
	if err := kmemleakWrite("clear"); err != nil {
		kmsgLine(fmt.Sprintf("xmitcheck guest: kmemleak: %v", err))
	}
	// The line also ends the last report for the console watcher.
	kmsgLine(fmt.Sprintf("xmitcheck guest: kmemleak: %d unreferenced object(s), scanned in %v",
		n, time.Since(start).Round(time.Millisecond)))
}

// kmemleakWrite writes a command to kmemleak's file, waiting at most
// kmemleakScanBound for it (a scan runs inside the write).
func kmemleakWrite(cmd string) error {
	done := make(chan error, 1)
	go func() { done <- os.WriteFile(kmemleakFile, []byte(cmd), 0) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		return nil
	case <-time.After(kmemleakScanBound):
		return fmt.Errorf("%s took more than %v: not waiting for it", cmd, kmemleakScanBound)
	}
}

// kmsgLine writes one record to the kernel log, through a file of its own
// (each open file of /dev/kmsg has its own rate limit of 10 records).
func kmsgLine(text string) {
	f, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
	if err != nil {
		logf("%s", text)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(text + "\n"); err != nil {
		logf("%s", text)
	}
}
