package devmap

import (
	"os"
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/guest/testmain"
)

// TestMain fails the binary when the tests leak file descriptors (BPF maps,
// programs, links, sockets, namespace handles) or create links outside their
// namespaces.
func TestMain(m *testing.M) {
	os.Exit(testmain.Run(m))
}
