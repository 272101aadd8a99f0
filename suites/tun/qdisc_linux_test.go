package tun

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// fqCodel makes fq_codel the root qdisc of l, or says the kernel lacks it
// (Debian builds it as a module; this machine's kernel has none).
func (te *tapEnv) fqCodel(l netlink.Link) error {
	q := netlink.NewFqCodel(netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT})
	err := te.e.Handle.QdiscReplace(q)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
		return feature.Unsupported(feature.FqCodel, "RTM_NEWQDISC fq_codel: %v", err)
	}
	if err != nil {
		return fmt.Errorf("replace root qdisc of %s with fq_codel: %w", l.Attrs().Name, err)
	}
	return nil
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
