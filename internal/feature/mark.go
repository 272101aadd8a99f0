package feature

import (
	"os"
	"strings"
)

// A mark is a line in the kernel log that opens or closes a window: a test
// binary's run (written by the runner as the binary starts and after it
// exited) or a test's (written by observe.Of as the test starts, and by
// its last cleanup, after its teardown). Marks go through printk, like
// the kernel's own reports, so the order of the log is the order of
// events on the guest's clock, whatever channel carries what the binaries
// print: the host gives each kernel report to the test, or else the
// binary, whose window holds it.
type MarkKind string

const (
	BinaryStart MarkKind = "binary start"
	BinaryExit  MarkKind = "binary exit"
	TestStart   MarkKind = "test start"
	TestEnd     MarkKind = "test end"
)

// markPrefix starts a mark's text in the log.
const markPrefix = "xmitcheck mark: "

// Mark writes a mark of kind for name (a binary's or a test's name) into
// the kernel log. It needs root; where it cannot write (a container, plain
// go test as a user) it does nothing, and reports fall back to the binary.
func Mark(kind MarkKind, name string) {
	f, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
	if err != nil {
		return
	}
	// One write is one record; a file of its own escapes the per-file
	// rate limit of /dev/kmsg writers.
	f.WriteString(markPrefix + string(kind) + " " + name + "\n")
	f.Close()
}

// ParseMark reads a mark from the text of a log line (after its printk
// prefix).
func ParseMark(text string) (MarkKind, string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), markPrefix)
	if !ok {
		return "", "", false
	}
	for _, k := range []MarkKind{BinaryStart, BinaryExit, TestStart, TestEnd} {
		if name, ok := strings.CutPrefix(rest, string(k)+" "); ok && name != "" {
			return k, name, true
		}
	}
	return "", "", false
}
