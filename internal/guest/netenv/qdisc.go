package netenv

import (
	"encoding/binary"
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

// RootQdisc replaces l's root qdisc with q (its LinkIndex and Parent are
// filled in).
func (e *Env) RootQdisc(tb testing.TB, l netlink.Link, q netlink.Qdisc) {
	tb.Helper()
	defer profile.Start(tb, profile.Setup).End()
	a := q.Attrs()
	a.LinkIndex = l.Attrs().Index
	a.Parent = netlink.HANDLE_ROOT
	if a.Handle == 0 {
		a.Handle = netlink.MakeHandle(1, 0)
	}
	if err := e.Handle.QdiscReplace(q); err != nil {
		unknownKind(tb, q.Type(), err)
		tb.Fatalf("netenv: replace root qdisc of %s with %s: %v", l.Attrs().Name, q.Type(), err)
	}
}

// Noqueue makes l a device without a qdisc.
func (e *Env) Noqueue(tb testing.TB, l netlink.Link) {
	tb.Helper()
	e.RootQdisc(tb, l, &netlink.GenericQdisc{QdiscType: "noqueue"})
}

// FqCodel replaces l's root qdisc with fq_codel, or returns
// feature.Unsupported(feature.FqCodel) where the kernel has none (Debian
// builds it as a module; a kernel may lack it): pass the error to
// feature.Require.
func (e *Env) FqCodel(l netlink.Link) error {
	defer profile.Running(profile.Setup).End()
	q := netlink.NewFqCodel(netlink.QdiscAttrs{
		LinkIndex: l.Attrs().Index,
		Parent:    netlink.HANDLE_ROOT,
		Handle:    netlink.MakeHandle(1, 0),
	})
	err := e.Handle.QdiscReplace(q)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
		return feature.Unsupported(feature.FqCodel, "RTM_NEWQDISC fq_codel on %s: %v", l.Attrs().Name, err)
	}
	if err != nil {
		return fmt.Errorf("replace root qdisc of %s with fq_codel: %w", l.Attrs().Name, err)
	}
	return nil
}

// Pfifo replaces l's root qdisc with "pfifo limit n" (netlink's Qdisc types
// cannot carry a pfifo limit, so the request is built here).
func (e *Env) Pfifo(tb testing.TB, l netlink.Link, limit uint32) {
	tb.Helper()
	defer profile.Start(tb, profile.Setup).End()
	if err := e.pfifo(l, netlink.MakeHandle(1, 0), netlink.HANDLE_ROOT, limit); err != nil {
		unknownKind(tb, "pfifo", err)
		tb.Fatalf("netenv: replace root qdisc of %s with pfifo limit %d: %v", l.Attrs().Name, limit, err)
	}
}

// MqPfifo makes the root of l an mq with handle 1: and gives tx queue i
// (class 1:i+1) a "pfifo limit" child with handle 10+i:, for queues
// 0..n-1, so each queue's backlog and drops can be read on its own
// (counters.ReadQdisc with parent 1:i+1).
func (e *Env) MqPfifo(tb testing.TB, l netlink.Link, n int, limit uint32) {
	tb.Helper()
	defer profile.Start(tb, profile.Setup).End()
	e.RootQdisc(tb, l, &netlink.GenericQdisc{QdiscType: "mq"})
	for i := range n {
		if err := e.pfifo(l, netlink.MakeHandle(uint16(10+i), 0), netlink.MakeHandle(1, uint16(i+1)), limit); err != nil {
			unknownKind(tb, "pfifo", err)
			tb.Fatalf("netenv: replace qdisc of %s at parent 1:%d with pfifo limit %d: %v", l.Attrs().Name, i+1, limit, err)
		}
	}
}

// unknownKind ends tb as an environment fault when err, a qdisc request's,
// says the kernel knows no qdisc of that kind (ENOENT: "Specified qdisc
// kind is unknown"): its module is not there, which is not the kernel's
// fault.
func unknownKind(tb testing.TB, kind string, err error) {
	tb.Helper()
	if errors.Is(err, unix.ENOENT) {
		observe.Fault(tb, feature.Environment, "netenv: qdisc %s: %v: this kernel has no qdisc of that kind "+
			"(a module the guest could not load?)", kind, err)
	}
}

// pfifo replaces the qdisc at parent of l with "pfifo limit n" as handle.
func (e *Env) pfifo(l netlink.Link, handle, parent, limit uint32) error {
	return e.Do(func() error {
		req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_REPLACE|unix.NLM_F_ACK)
		req.AddData(&nl.TcMsg{
			Family:  nl.FAMILY_ALL,
			Ifindex: int32(l.Attrs().Index),
			Handle:  handle,
			Parent:  parent,
		})
		req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("pfifo")))
		// struct tc_fifo_qopt { __u32 limit; };
		req.AddData(nl.NewRtAttr(nl.TCA_OPTIONS, binary.NativeEndian.AppendUint32(nil, limit)))
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	})
}
