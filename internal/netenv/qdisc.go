package netenv

import (
	"encoding/binary"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// RootQdisc replaces l's root qdisc with q (its LinkIndex and Parent are
// filled in).
func (e *Env) RootQdisc(tb testing.TB, l netlink.Link, q netlink.Qdisc) {
	tb.Helper()
	a := q.Attrs()
	a.LinkIndex = l.Attrs().Index
	a.Parent = netlink.HANDLE_ROOT
	if a.Handle == 0 {
		a.Handle = netlink.MakeHandle(1, 0)
	}
	if err := e.Handle.QdiscReplace(q); err != nil {
		tb.Fatalf("netenv: replace root qdisc of %s with %s: %v", l.Attrs().Name, q.Type(), err)
	}
}

// Noqueue makes l a device without a qdisc.
func (e *Env) Noqueue(tb testing.TB, l netlink.Link) {
	tb.Helper()
	e.RootQdisc(tb, l, &netlink.GenericQdisc{QdiscType: "noqueue"})
}

// Pfifo replaces l's root qdisc with "pfifo limit n" (netlink's Qdisc types
// cannot carry a pfifo limit, so the request is built here).
func (e *Env) Pfifo(tb testing.TB, l netlink.Link, limit uint32) {
	tb.Helper()
	err := e.Do(func() error {
		req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_REPLACE|unix.NLM_F_ACK)
		req.AddData(&nl.TcMsg{
			Family:  nl.FAMILY_ALL,
			Ifindex: int32(l.Attrs().Index),
			Handle:  netlink.MakeHandle(1, 0),
			Parent:  netlink.HANDLE_ROOT,
		})
		req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("pfifo")))
		// struct tc_fifo_qopt { __u32 limit; };
		opt := binary.NativeEndian.AppendUint32(nil, limit)
		req.AddData(nl.NewRtAttr(nl.TCA_OPTIONS, opt))
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	})
	if err != nil {
		tb.Fatalf("netenv: replace root qdisc of %s with pfifo limit %d: %v", l.Attrs().Name, limit, err)
	}
}
