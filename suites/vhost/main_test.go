package vhost

import (
	"os"
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/guest/testmain"
)

// TestMain fails the binary when the tests leak file descriptors (vhost and
// tap files, eventfds, BPF programs, sockets) or create links outside their
// namespaces.
func TestMain(m *testing.M) {
	os.Exit(testmain.Run(m))
}
