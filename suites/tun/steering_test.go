package tun

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// streamSteering returns a TUNSETSTEERINGEBPF program that sends every
// xmitcheck frame to queue stream % numqueues: it returns the 32-bit stream
// field of the frame (bytes 18-21, see traffic.Frame).
func streamSteering(t testing.TB) *ebpf.Program {
	t.Helper()
	defer profile.Start(t, profile.Setup).End()
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
