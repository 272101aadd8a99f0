package counters

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
)

// ReadLink returns the stats64 of the link called name.
func ReadLink(h *netlink.Handle, name string) (Link, error) {
	l, err := h.LinkByName(name)
	if err != nil {
		return Link{}, fmt.Errorf("link %s: %w", name, err)
	}
	s := l.Attrs().Statistics
	if s == nil {
		return Link{}, fmt.Errorf("link %s: no IFLA_STATS64", name)
	}
	return Link{TxPackets: s.TxPackets, TxDropped: s.TxDropped, RxPackets: s.RxPackets, RxDropped: s.RxDropped}, nil
}

// ReadRootQdisc returns the stats of the root qdisc of the link called name
// in e's namespace.
func ReadRootQdisc(e *netenv.Env, name string) (Qdisc, error) {
	return ReadQdisc(e, name, netlink.HANDLE_ROOT)
}

// ReadQdisc returns the stats of the qdisc whose parent is parent on the
// link called name in e's namespace, decoded from TCA_STATS2 itself:
// netlink v1.3.1's QdiscList lets the legacy TCA_STATS (struct tc_stats,
// which has no requeues) that follows overwrite TCA_STATS2, so it always
// reports 0 requeues, and a requeue is the device answering NETDEV_TX_BUSY.
func ReadQdisc(e *netenv.Env, name string, parent uint32) (Qdisc, error) {
	l, err := e.Handle.LinkByName(name)
	if err != nil {
		return Qdisc{}, fmt.Errorf("link %s: %w", name, err)
	}
	ifindex := l.Attrs().Index
	var msgs [][]byte
	err = e.Do(func() (err error) {
		req := nl.NewNetlinkRequest(unix.RTM_GETQDISC, unix.NLM_F_DUMP)
		req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(ifindex)})
		msgs, err = req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWQDISC)
		return err
	})
	if err != nil {
		return Qdisc{}, fmt.Errorf("dump qdiscs of %s: %w", name, err)
	}
	for _, m := range msgs {
		tc := nl.DeserializeTcMsg(m)
		if int(tc.Ifindex) != ifindex || tc.Parent != parent {
			continue
		}
		q, err := parseQdisc(m[tc.Len():])
		if err != nil {
			return Qdisc{}, fmt.Errorf("qdisc of %s at parent %s: %w", name, netlink.HandleStr(parent), err)
		}
		return q, nil
	}
	return Qdisc{}, fmt.Errorf("link %s has no qdisc at parent %s", name, netlink.HandleStr(parent))
}

// parseQdisc decodes TCA_KIND and TCA_STATS2's TCA_STATS_BASIC and
// TCA_STATS_QUEUE from the attributes of one RTM_NEWQDISC message:
//
//	struct gnet_stats_basic { __u64 bytes; __u32 packets; };
//	struct gnet_stats_queue {
//		__u32 qlen; __u32 backlog; __u32 drops; __u32 requeues; __u32 overlimits;
//	};
func parseQdisc(b []byte) (Qdisc, error) {
	attrs, err := nl.ParseRouteAttr(b)
	if err != nil {
		return Qdisc{}, fmt.Errorf("attributes: %w", err)
	}
	var q Qdisc
	var basic, queue bool
	for _, a := range attrs {
		switch a.Attr.Type {
		case nl.TCA_KIND:
			q.Kind = unix.ByteSliceToString(a.Value)
		case nl.TCA_STATS2:
			inner, err := nl.ParseRouteAttr(a.Value)
			if err != nil {
				return Qdisc{}, fmt.Errorf("TCA_STATS2: %w", err)
			}
			for _, s := range inner {
				v := s.Value
				switch s.Attr.Type {
				case nl.TCA_STATS_BASIC:
					if len(v) < 12 {
						return Qdisc{}, fmt.Errorf("TCA_STATS_BASIC is %d bytes, want 12", len(v))
					}
					q.Packets = uint64(binary.NativeEndian.Uint32(v[8:12]))
					basic = true
				case nl.TCA_STATS_QUEUE:
					if len(v) < 20 {
						return Qdisc{}, fmt.Errorf("TCA_STATS_QUEUE is %d bytes, want 20", len(v))
					}
					q.Qlen = uint64(binary.NativeEndian.Uint32(v[0:4]))
					q.Backlog = uint64(binary.NativeEndian.Uint32(v[4:8]))
					q.Drops = uint64(binary.NativeEndian.Uint32(v[8:12]))
					q.Requeues = uint64(binary.NativeEndian.Uint32(v[12:16]))
					q.Overlimits = uint64(binary.NativeEndian.Uint32(v[16:20]))
					queue = true
				}
			}
		}
	}
	if !basic || !queue {
		return Qdisc{}, fmt.Errorf("%s: no TCA_STATS2 basic and queue stats", q.Kind)
	}
	return q, nil
}
