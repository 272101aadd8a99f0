package tun

import (
	"os"
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/guest/testmain"
)

// TestMain fails the binary when the tests leak file descriptors (a leaked
// queue file keeps a tap and its ring alive) or create links outside their
// namespaces.
func TestMain(m *testing.M) {
	os.Exit(testmain.Run(m))
}
