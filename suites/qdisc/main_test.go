package qdisc

import (
	"os"
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/guest/testmain"
)

// TestMain fails the binary when the tests leak file descriptors (sockets,
// tap files, BPF maps, programs and links) or create links outside their
// namespaces.
func TestMain(m *testing.M) {
	os.Exit(testmain.Run(m))
}
