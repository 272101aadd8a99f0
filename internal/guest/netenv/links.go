package netenv

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
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
		if errors.Is(err, unix.EOPNOTSUPP) {
			// rtnetlink knows no link type "veth": its module is not
			// there (CONFIG_VETH=m and no modules), not the kernel's fault.
			observe.Fault(tb, feature.Environment, "netenv: add veth %s/%s: %v: this kernel has no veth link "+
				"type (CONFIG_VETH; a module the guest could not load?)", name, peer, err)
		}
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

// deleteGroup is the device group DeleteLinks moves links into before it
// deletes them: any group but 0, which every device starts in.
const deleteGroup = 0x786d

// DeleteLinks deletes links, and the peers of veths among them, with one
// RTM_DELLINK for a device group: the kernel unregisters them as one batch
// (unregister_netdevice_many), waiting out one set of RCU grace periods
// instead of one per link. RTM_DELLINK returns once they are unregistered.
// A link already gone is skipped.
func (e *Env) DeleteLinks(links ...netlink.Link) error {
	n := 0
	for _, l := range links {
		err := e.Handle.LinkSetGroup(l, deleteGroup)
		if errors.Is(err, unix.ENODEV) {
			continue
		}
		if err != nil {
			return fmt.Errorf("move %s into group %#x: %w", l.Attrs().Name, deleteGroup, err)
		}
		n++
	}
	if n == 0 {
		return nil
	}
	err := e.Do(func() error {
		req := nl.NewNetlinkRequest(unix.RTM_DELLINK, unix.NLM_F_ACK)
		req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
		req.AddData(nl.NewRtAttr(unix.IFLA_GROUP, nl.Uint32Attr(deleteGroup)))
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete device group %#x (%d links): %w", deleteGroup, n, err)
	}
	return nil
}
