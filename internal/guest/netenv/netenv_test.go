package netenv

import (
	"os"
	"testing"

	"github.com/vishvananda/netlink"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestNamespaceIsolated(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("-short, or not root: needs root to create network namespaces")
	}
	e := New(t)
	a, _ := e.Veth(t, "xc0", "xc1", 64)
	assert.Check(t, is.Equal(a.Attrs().TxQLen, 64))

	_, err := netlink.LinkByName("xc0")
	assert.Check(t, err != nil, "veth leaked into the caller's namespace")

	e.Pfifo(t, a, 7)
	qs, err := e.Handle.QdiscList(a)
	assert.NilError(t, err)
	assert.Assert(t, is.Len(qs, 1))
	assert.Check(t, is.Equal(qs[0].Type(), "pfifo"))
}
