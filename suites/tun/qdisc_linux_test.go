package tun

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// mqPfifo makes the root of l an mq with handle 1: and gives tx queue i
// (class 1:i+1) a "pfifo limit" child, for queues 0..n-1, so each queue's
// backlog and drops can be read on its own.
func (te *tapEnv) mqPfifo(t testing.TB, l netlink.Link, n int, limit uint32) {
	t.Helper()
	te.e.RootQdisc(t, l, &netlink.GenericQdisc{QdiscType: "mq"})
	for i := range n {
		err := te.e.Do(func() error {
			req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_REPLACE|unix.NLM_F_ACK)
			req.AddData(&nl.TcMsg{
				Family:  nl.FAMILY_ALL,
				Ifindex: int32(l.Attrs().Index),
				Handle:  netlink.MakeHandle(uint16(10+i), 0),
				Parent:  netlink.MakeHandle(1, uint16(i+1)),
			})
			req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("pfifo")))
			// struct tc_fifo_qopt { __u32 limit; };
			req.AddData(nl.NewRtAttr(nl.TCA_OPTIONS, binary.NativeEndian.AppendUint32(nil, limit)))
			_, err := req.Execute(unix.NETLINK_ROUTE, 0)
			return err
		})
		if err != nil {
			t.Fatalf("replace qdisc of %s at parent 1:%d with pfifo limit %d: %v", l.Attrs().Name, i+1, limit, err)
		}
	}
}

// fqCodel makes fq_codel the root qdisc of l, or says the kernel lacks it
// (Debian builds it as a module; this machine's kernel has none).
func (te *tapEnv) fqCodel(l netlink.Link) error {
	q := netlink.NewFqCodel(netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT})
	err := te.e.Handle.QdiscReplace(q)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
		return feature.Unsupported("fq_codel", "RTM_NEWQDISC fq_codel: %v", err)
	}
	if err != nil {
		return fmt.Errorf("replace root qdisc of %s with fq_codel: %w", l.Attrs().Name, err)
	}
	return nil
}

// queueQdisc returns the stats of the child qdisc of tx queue i under mq 1:.
func (te *tapEnv) queueQdisc(i int) (counters.Qdisc, error) {
	return counters.ReadQdisc(te.e, tapName, netlink.MakeHandle(1, uint16(i+1)))
}

// streamSteering returns a TUNSETSTEERINGEBPF program that sends every
// xmitcheck frame to queue stream % numqueues: it returns the 32-bit stream
// field of the frame (bytes 18-21, see traffic.Frame).
func streamSteering(t testing.TB) *ebpf.Program {
	t.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.SocketFilter,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1), // LD_ABS reads the skb in R6
			asm.LoadAbs(18, asm.Word),   // R0 = ntohl(stream)
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatalf("load the steering program: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
