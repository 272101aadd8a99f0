package qdisc

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/netenv"
)

// rootRequeues returns the requeues of the root qdisc of ifindex, read from
// TCA_STATS2/TCA_STATS_QUEUE,
//
//	struct gnet_stats_queue {
//		__u32 qlen; __u32 backlog; __u32 drops; __u32 requeues; __u32 overlimits;
//	};
//
// netlink v1.3.1 lets the legacy TCA_STATS
// (struct tc_stats, which has no requeues) that follows overwrite
// TCA_STATS2, so counters.ReadRootQdisc always sees 0 requeues; a requeue
// is the device answering NETDEV_TX_BUSY, i.e. veth's backpressure.
func rootRequeues(e *netenv.Env, ifindex int) (uint64, error) {
	var msgs [][]byte
	err := e.Do(func() (err error) {
		req := nl.NewNetlinkRequest(unix.RTM_GETQDISC, unix.NLM_F_DUMP)
		req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(ifindex)})
		msgs, err = req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWQDISC)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("dump qdiscs of ifindex %d: %w", ifindex, err)
	}
	for _, m := range msgs {
		tc := nl.DeserializeTcMsg(m)
		if int(tc.Ifindex) != ifindex || tc.Parent != netlink.HANDLE_ROOT {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[tc.Len():])
		if err != nil {
			return 0, fmt.Errorf("qdisc attributes: %w", err)
		}
		for _, a := range attrs {
			if a.Attr.Type != nl.TCA_STATS2 {
				continue
			}
			inner, err := nl.ParseRouteAttr(a.Value)
			if err != nil {
				return 0, fmt.Errorf("TCA_STATS2: %w", err)
			}
			for _, s := range inner {
				if s.Attr.Type != nl.TCA_STATS_QUEUE {
					continue
				}
				if len(s.Value) < 20 {
					return 0, fmt.Errorf("TCA_STATS_QUEUE is %d bytes, want 20", len(s.Value))
				}
				return uint64(binary.NativeEndian.Uint32(s.Value[12:16])), nil
			}
		}
		return 0, fmt.Errorf("root qdisc of ifindex %d has no TCA_STATS2/TCA_STATS_QUEUE", ifindex)
	}
	return 0, fmt.Errorf("ifindex %d has no root qdisc", ifindex)
}
