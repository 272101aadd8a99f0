package counters

import (
	"fmt"

	"github.com/vishvananda/netlink"
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

// ReadRootQdisc returns the stats of the root qdisc of the link called name.
func ReadRootQdisc(h *netlink.Handle, name string) (Qdisc, error) {
	l, err := h.LinkByName(name)
	if err != nil {
		return Qdisc{}, fmt.Errorf("link %s: %w", name, err)
	}
	qs, err := h.QdiscList(l)
	if err != nil {
		return Qdisc{}, fmt.Errorf("qdiscs of %s: %w", name, err)
	}
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent != netlink.HANDLE_ROOT {
			continue
		}
		st := a.Statistics
		if st == nil || st.Basic == nil || st.Queue == nil {
			return Qdisc{}, fmt.Errorf("root qdisc %s of %s: no TCA_STATS2", q.Type(), name)
		}
		return Qdisc{
			Kind:       q.Type(),
			Packets:    uint64(st.Basic.Packets),
			Qlen:       uint64(st.Queue.Qlen),
			Backlog:    uint64(st.Queue.Backlog),
			Drops:      uint64(st.Queue.Drops),
			Requeues:   uint64(st.Queue.Requeues),
			Overlimits: uint64(st.Queue.Overlimits),
		}, nil
	}
	return Qdisc{}, fmt.Errorf("link %s has no root qdisc", name)
}
