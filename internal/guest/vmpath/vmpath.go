// Package vmpath builds a tap whose other side behaves like a VM, for the
// costs a tap's mode puts on real traffic: namespace H holds the tap
// under test (HostTap), namespace G a second, plain tap (GuestTap) that
// plays the VM's NIC, each with an IPv4 address of one subnet, and a
// consumer moves frames between the two as a hypervisor would: read(2) of
// the tap's queue file (Read), or a userspace vhost-net guest with the
// tap as its backend (VhostNet). Streams then runs TCP from H to G across
// it, and Bench measures that as a cost benchmark.
package vmpath

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
)

// The taps, in H and in G.
const (
	HostTap  = "xtap0"
	GuestTap = "xvm0"
)

// The addresses of the two taps, on one subnet.
var (
	HostAddr  = netip.MustParsePrefix("10.77.0.1/24")
	GuestAddr = netip.MustParsePrefix("10.77.0.2/24")
)

// Consumer is what takes frames off HostTap's ring and gives it the VM's.
type Consumer string

const (
	// Read is a hypervisor without vhost: a thread blocked in read(2) of
	// the queue file writes each frame into GuestTap, and another blocked
	// in read(2) of GuestTap writes the VM's frames into the queue file.
	Read Consumer = "read"
	// VhostNet is a hypervisor with vhost-net: the queue file (with a
	// 12-byte virtio-net header) is the backend of a vhost-net device
	// (internal/guest/vhostnet), whose RX virtqueue a thread empties into
	// GuestTap; the VM's frames go back through its TX virtqueue.
	VhostNet Consumer = "vhost-net"
)

// Config says how to build a Path.
type Config struct {
	Consumer Consumer
	// Backpressure opens HostTap with IFF_BACKPRESSURE; the probe skips
	// the caller where the kernel lacks it.
	Backpressure bool
	// Offload gives HostTap the receive offloads of a VM whose virtio-net
	// driver negotiated checksum and TSO offloads (qemu's default):
	// TUNSETOFFLOAD with TUN_F_CSUM, TUN_F_TSO4, TUN_F_TSO6 and
	// TUN_F_TSO_ECN. H's stack then hands the tap unsegmented TCP packets
	// of up to 64 KiB with their checksums to fill in, one ring entry each,
	// and the consumer passes them into GuestTap with their virtio-net
	// header. Without it every ring entry is a frame of the MTU at most,
	// its checksum done.
	Offload bool
}

func (c Config) String() string {
	flag := "flag off"
	if c.Backpressure {
		flag = "IFF_BACKPRESSURE"
	}
	off := "no offloads"
	if c.Offload {
		off = "checksum and TSO offloads"
	}
	return fmt.Sprintf("%s consumer, %s, %s", c.Consumer, flag, off)
}

// Counters are HostTap's counters: tun's (tx_dropped is the ring's
// tail-drop) and its root qdisc's.
type Counters struct {
	Link  counters.Link
	Qdisc counters.Qdisc
}

// Window is what a stretch of streaming moved.
type Window struct {
	// Took is the window's length: from the senders' start until the
	// receivers' bytes were read at its end.
	Took time.Duration
	// Bytes the receivers read in the window, all streams together.
	Bytes uint64
	// Retrans are the segments the senders retransmitted in the window
	// (tcpi_total_retrans).
	Retrans uint64
}

// Mbits is the window's goodput in Mbit/s.
func (w Window) Mbits() float64 { return float64(w.Bytes) * 8 / 1e6 / w.Took.Seconds() }
