package tun

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/rounds"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

const (
	// udpMessage is netperf's -m 1024 of seed 002's table.
	udpMessage = 1024
	// udpPort is where the messages go (discard); the far end is a
	// neighbour that only the tap's reader plays.
	udpPort = 9
	// udpPerOp is the streaming one op stands for: -benchtime 100000x
	// streams for 1 s, as netperf's -l streams for a time.
	udpPerOp = 10 * time.Microsecond
)

var (
	udpLocal  = net.IPv4(10, 78, 0, 1)
	udpRemote = net.IPv4(10, 78, 0, 2)
	udpMAC    = net.HardwareAddr{2, 0, 0, 0, 0x78, 2}
)

// BenchmarkUDPStream is seed 002's netperf UDP_STREAM through a tap: one
// blocking UDP socket sends 1024-byte messages for b.N × udpPerOp to a
// neighbour behind the tap, whose reader is the receiver. Side A is the
// flag off (stock tun tail-drops a full ring), side B the flag on, the
// kernel's default qdisc on both: 7.3's flag-on path is 002's stop at the
// limit for a tap with a qdisc, so it stands for the patch (no kernel
// carries 002 itself). It reports the sender's rate (tx-Mbit/s, messages
// sendto(2) took per second of sending), the receiver's (rx-Mbit/s,
// messages read per second until every one was read or dropped), the
// sender thread's system CPU per second of sending (sys-ms/s), and the
// share of the messages sent that were lost (lost-%). Every
// message is accounted for: sent = read + tun drops + qdisc drops
// (+ QDISC_BURST_DROP before the qdisc).
func BenchmarkUDPStream(b *testing.B) {
	stock := tapOpts{ring: 500, root: "default"}
	patched := stock
	patched.flags = tuntap.IFFBackpressure
	rounds.Run(b, func(b *testing.B) { benchUDP(b, stock) }, func(b *testing.B) { benchUDP(b, patched) })
}

func benchUDP(b *testing.B, o tapOpts) {
	rig := newTap(b, o)
	rig.route(b)
	burst, err := dropmon.WatchBurst(b, rig.e.NS, rig.ifindex, unix.ETH_P_IP)
	if err != nil {
		b.Logf("no burst drops to count: %v", err)
		burst = func() (uint64, error) { return 0, nil }
	}
	base, err := rig.state()
	assert.NilError(b, err)
	var read atomic.Uint64
	stop := make(chan struct{})
	readErr := make(chan error, 1)
	go func() { readErr <- readUDP(rig.dev, &read, stop) }()
	stopReader := sync.OnceValue(func() error { close(stop); return <-readErr })
	defer stopReader()

	b.ResetTimer()
	start := time.Now()
	snd, err := rig.sendUDP(time.Duration(b.N) * udpPerOp)
	assert.NilError(b, err)
	st, werr := counters.WaitFor(context.Background(), waitLimit, rig.sampler(burst), func(s sample) bool {
		return s.settled() && udpLedger(snd.sent, read.Load(), base, s).Balanced()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	assert.NilError(b, stopReader())
	l := udpLedger(snd.sent, read.Load(), base, st)
	assert.NilError(b, werr, "every message accounted for after the sender stopped: %v", l)
	bits := float64(udpMessage * 8)
	b.ReportMetric(float64(snd.sent)*bits/snd.took.Seconds()/1e6, "tx-Mbit/s")
	b.ReportMetric(float64(l.Received)*bits/elapsed.Seconds()/1e6, "rx-Mbit/s")
	b.ReportMetric(float64(snd.sys.Milliseconds())/snd.took.Seconds(), "sys-ms/s")
	b.ReportMetric(100*float64(l.Sent-l.Received)/float64(max(l.Sent, 1)), "lost-%")
	b.ReportMetric(0, "ns/op")
	b.Logf("%v in %v (sending %v, sender's system CPU %v)", l, elapsed.Round(time.Millisecond),
		snd.took.Round(time.Millisecond), snd.sys)
}

// udpLedger accounts for the messages sent since base.
func udpLedger(sent, read uint64, base state, s sample) counters.Accounting {
	return dropmon.BookBurst(counters.Accounting{
		Sent: sent, Received: read,
		DeviceDrops: s.Link.TxDropped - base.Link.TxDropped,
		QdiscDrops:  s.Q.Drops - base.Q.Drops,
	}, s.burst)
}

// route gives the tap udpLocal/24 and a permanent neighbour udpRemote, so
// that messages to it leave through the tap without an ARP exchange.
func (rig *tapRig) route(t testing.TB) {
	t.Helper()
	h, l := rig.e.Handle, rig.link(t)
	assert.NilError(t, h.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: udpLocal, Mask: net.CIDRMask(24, 32)}}))
	assert.NilError(t, h.NeighAdd(&netlink.Neigh{LinkIndex: l.Attrs().Index, Family: unix.AF_INET,
		State: netlink.NUD_PERMANENT, IP: udpRemote, HardwareAddr: udpMAC}))
}

// udpSend is what the sender did.
type udpSend struct {
	sent      uint64
	took, sys time.Duration
}

// sendUDP sends messages to udpRemote for d from a blocking socket with
// the default send buffer, on a locked thread in the tap's namespace, and
// measures that thread's system CPU.
func (rig *tapRig) sendUDP(d time.Duration) (udpSend, error) {
	var r udpSend
	err := rig.e.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("UDP socket: %w", err)
		}
		defer unix.Close(fd)
		to := &unix.SockaddrInet4{Port: udpPort}
		copy(to.Addr[:], udpRemote.To4())
		if err := unix.Connect(fd, to); err != nil {
			return fmt.Errorf("connect to %v:%d: %w", udpRemote, udpPort, err)
		}
		msg := make([]byte, udpMessage)
		sys0 := threadSys()
		start := time.Now()
		for end := start.Add(d); time.Now().Before(end); {
			// One thread sends and counts, as netperf does: nothing else
			// runs on it while a send blocks.
			if _, err := unix.Write(fd, msg); err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				return fmt.Errorf("send message %d: %w", r.sent+1, err)
			}
			r.sent++
		}
		r.took, r.sys = time.Since(start), threadSys()-sys0
		return nil
	})
	return r, err
}

// threadSys is the calling thread's system CPU time.
func threadSys() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Stime.Nano())
}

// readUDP reads the tap until stop is closed, counting the IPv4 UDP
// messages to udpPort; anything else read is an error, since it would be
// outside the ledger.
func readUDP(dev *tuntap.Device, n *atomic.Uint64, stop <-chan struct{}) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The file's own descriptor stays non-blocking (File.Fd would make it
	// block), so that a read returns when stop may have come.
	rc, err := dev.SyscallConn()
	if err != nil {
		return err
	}
	var fd int
	if err := rc.Control(func(f uintptr) { fd = int(f) }); err != nil {
		return err
	}
	buf := make([]byte, 2048)
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		k, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			if _, err := unix.Poll(pfd, 10); err != nil && !errors.Is(err, unix.EINTR) {
				return fmt.Errorf("poll the tap: %w", err)
			}
			continue
		case err != nil:
			return fmt.Errorf("read the tap: %w", err)
		}
		if !isUDPTo(buf[:k], udpPort) {
			return fmt.Errorf("read a frame that is not a message to port %d: % x", udpPort, buf[:min(k, 48)])
		}
		n.Add(1)
	}
}

// isUDPTo tells whether f is an Ethernet frame of an IPv4 UDP datagram to
// port.
func isUDPTo(f []byte, port uint16) bool {
	if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:]) != unix.ETH_P_IP || f[14+9] != unix.IPPROTO_UDP {
		return false
	}
	ihl := int(f[14]&0x0f) * 4
	return len(f) >= 14+ihl+8 && binary.BigEndian.Uint16(f[14+ihl+2:]) == port
}
