package netenv

import (
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// Veth creates a veth pair inside the namespace, both ends up, and returns
// them. txqlen sets both ends' queue length when it is not zero.
func (e *Env) Veth(tb testing.TB, name, peer string, txqlen int) (netlink.Link, netlink.Link) {
	tb.Helper()
	defer profile.Start(tb, profile.Setup).End()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = name
	if txqlen > 0 {
		attrs.TxQLen = txqlen
	}
	v := &netlink.Veth{LinkAttrs: attrs, PeerName: peer}
	if err := e.Handle.LinkAdd(v); err != nil {
		tb.Fatalf("netenv: add veth %s/%s: %v", name, peer, err)
	}
	a := e.Link(tb, name)
	b := e.Link(tb, peer)
	if txqlen > 0 {
		if err := e.Handle.LinkSetTxQLen(b, txqlen); err != nil {
			tb.Fatalf("netenv: set txqueuelen of %s: %v", peer, err)
		}
	}
	e.Up(tb, a)
	e.Up(tb, b)
	return e.Link(tb, name), e.Link(tb, peer)
}

// Link looks a link up by name, failing tb when it is not there.
func (e *Env) Link(tb testing.TB, name string) netlink.Link {
	tb.Helper()
	l, err := e.Handle.LinkByName(name)
	if err != nil {
		tb.Fatalf("netenv: link %s: %v", name, err)
	}
	return l
}

// Up sets a link up.
func (e *Env) Up(tb testing.TB, l netlink.Link) {
	tb.Helper()
	defer profile.Start(tb, profile.Setup).End()
	if err := e.Handle.LinkSetUp(l); err != nil {
		tb.Fatalf("netenv: set %s up: %v", l.Attrs().Name, err)
	}
}

// Down sets a link down.
func (e *Env) Down(tb testing.TB, l netlink.Link) {
	tb.Helper()
	if err := e.Handle.LinkSetDown(l); err != nil {
		tb.Fatalf("netenv: set %s down: %v", l.Attrs().Name, err)
	}
}
