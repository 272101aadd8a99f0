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

// TestDeleteLinks: the links given and their veth peers go, in one batch; a
// link already gone is skipped; a link not given stays.
func TestDeleteLinks(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("-short, or not root: needs root to create network namespaces")
	}
	e := New(t)
	a, _ := e.Veth(t, "xa0", "xa1", 0)
	b, _ := e.Veth(t, "xb0", "xb1", 0)
	keep, _ := e.Veth(t, "xk0", "xk1", 0)
	assert.NilError(t, e.Handle.LinkDel(b))

	assert.NilError(t, e.DeleteLinks(a, b))
	for _, name := range []string{"xa0", "xa1", "xb0", "xb1"} {
		_, err := e.Handle.LinkByName(name)
		assert.Check(t, err != nil, "%s is still there", name)
	}
	_, err := e.Handle.LinkByName(keep.Attrs().Name)
	assert.Check(t, err, "a link not given must stay")
	assert.NilError(t, e.DeleteLinks(a, b), "links already gone are skipped")
}

// TestShared: a shared namespace is bare until a test leaves a device in
// it, and bare again once the test deleted it.
func TestShared(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("-short, or not root: needs root to create network namespaces")
	}
	e, close, err := Shared()
	assert.NilError(t, err)
	defer func() { assert.Check(t, close()) }()
	assert.NilError(t, e.Bare())
	a, _ := e.Veth(t, "xs0", "xs1", 0)
	assert.Check(t, is.ErrorContains(e.Bare(), "xs0"))
	assert.NilError(t, e.DeleteLinks(a))
	assert.Check(t, e.Bare())
	_, err = netlink.LinkByName("xs0")
	assert.Check(t, err != nil, "veth leaked into the caller's namespace")
}
