package qdisc

import (
	"encoding/binary"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// bfifo replaces the root qdisc of the rig's device with "bfifo limit
// bytes" under handle 2: (netenv.Pfifo uses 1:, and a replace that keeps
// the handle must keep the kind). netlink's GenericQdisc sends an empty
// TCA_OPTIONS, which fifo_init rejects, so the request is built here.
func (r *rig) bfifo(tb testing.TB, bytes uint32) {
	tb.Helper()
	err := r.e.Do(func() error {
		req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_REPLACE|unix.NLM_F_ACK)
		req.AddData(&nl.TcMsg{
			Family:  nl.FAMILY_ALL,
			Ifindex: int32(r.dev.Attrs().Index),
			Handle:  netlink.MakeHandle(2, 0),
			Parent:  netlink.HANDLE_ROOT,
		})
		req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("bfifo")))
		// struct tc_fifo_qopt { __u32 limit; };
		req.AddData(nl.NewRtAttr(nl.TCA_OPTIONS, binary.NativeEndian.AppendUint32(nil, bytes)))
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	})
	if err != nil {
		tb.Fatalf("replace root qdisc of %s with bfifo limit %d: %v", r.dev.Attrs().Name, bytes, err)
	}
}
