package devmap

import (
	"os"
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/testmain"
)

// TestMain fails the binary when the tests leak file descriptors (BPF maps,
// programs, links, sockets, namespace handles) or create links outside their
// namespaces. A pipe opened and closed first starts the runtime's poller,
// whose descriptors live as long as the process and are no leak.
func TestMain(m *testing.M) {
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	os.Exit(testmain.Run(m))
}
