package tun

import (
	"fmt"
	"os"
	"testing"
)

// TestMain fails the run when the tests leave file descriptors open (taps,
// sockets, BPF objects): a leaked queue file keeps a tap and its ring alive.
func TestMain(m *testing.M) {
	// Open and close a pipe first so the runtime's poller, which lives for
	// the whole process, is counted before the tests start.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	before, err := openFDs()
	if err != nil {
		fmt.Fprintf(os.Stderr, "suites/tun: %v\n", err)
		os.Exit(2)
	}
	code := m.Run()
	after, err := openFDs()
	if err == nil && after > before && code == 0 {
		fmt.Fprintf(os.Stderr, "suites/tun: %d file descriptors leaked by the tests (%d open before, %d after)\n", after-before, before, after)
		code = 1
	}
	os.Exit(code)
}

func openFDs() (int, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("count open files: %w", err)
	}
	return len(ents), nil
}
