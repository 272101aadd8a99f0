package vhost

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/kmsg"
	"github.com/xmitcheck/xmitcheck/internal/margin"
	"github.com/xmitcheck/xmitcheck/internal/netenv"
	"github.com/xmitcheck/xmitcheck/internal/traffic"
	"github.com/xmitcheck/xmitcheck/internal/tuntap"
	guest "github.com/xmitcheck/xmitcheck/internal/vhost"
)

const (
	tapName = "xvtap0"
	// ring is the tap's txqueuelen unless a setup says otherwise: the size
	// of each queue's ptr_ring.
	ring = 256
	// guestQueue is the size of the guest's RX virtqueue.
	guestQueue = 256
	// ringSlack is how many slots of a ptr_ring of this size a consumer may
	// have taken without the producer seeing them free yet: ptr_ring zeroes
	// consumed slots in batches of SMP_CACHE_BYTES*2/sizeof(void *) = 16
	// (__ptr_ring_discard_one), so a "full" ring holds at least ring-15.
	ringSlack = 15
	// bigFIFO is the pfifo limit of the backpressure tests: large enough
	// that the qdisc never drops what they send.
	bigFIFO = 100000
	// wait bounds every wait of the suite on a slow (TCG) guest.
	wait = 20 * time.Second
	// mrgBufSize is the size of mergeable receive buffers: smaller than the
	// header and a frame (12 + 60 bytes), so every frame takes two.
	mrgBufSize = 40
)

// virtioVariants are the guest configurations the tests run with besides
// the default (VIRTIO_F_VERSION_1 only): event indexes, indirect
// descriptors, mergeable receive buffers.
var virtioVariants = []guest.Config{
	{Features: guest.FeatureEventIdx},
	{Features: guest.FeatureIndirect},
	{Features: guest.FeatureMrgRxBuf, BufSize: mrgBufSize},
}

// virtioAll is every feature of virtioVariants at once.
var virtioAll = guest.Config{Features: guest.FeatureEventIdx | guest.FeatureIndirect | guest.FeatureMrgRxBuf, BufSize: mrgBufSize}

// Qdiscs at the root of the tap.
const (
	qdiscDefault = ""         // what the kernel gives a tap: pfifo_fast, or mq of pfifo_fast
	qdiscPfifo   = "pfifo"    // pfifo limit bigFIFO
	qdiscFqCodel = "fq_codel" // fq_codel with its defaults (limit 10240)
)

// setup says how to build a rig.
type setup struct {
	backpressure bool   // open the tap with IFF_BACKPRESSURE (probed; skips where missing)
	qdisc        string // root qdisc, one of the qdisc* constants
	queues       int    // tap queues, each with its own guest; 0 means 1
	ring         int    // the tap's txqueuelen (ptr_ring size); 0 means ring
	// virtio is the guests' features and buffer size (the queue size is
	// guestQueue).
	virtio      guest.Config
	lateBackend bool // leave the guests detached: the test calls attach
}

func (s setup) String() string {
	mode := "stock"
	if s.backpressure {
		mode = "backpressure"
	}
	q := s.qdisc
	if q == "" {
		q = "default"
	}
	if s.ring != 0 {
		q += fmt.Sprintf("_ring%d", s.ring)
	}
	for _, f := range []struct {
		bit  uint64
		name string
	}{{guest.FeatureEventIdx, "eventidx"}, {guest.FeatureIndirect, "indirect"}, {guest.FeatureMrgRxBuf, "mrgrxbuf"}} {
		if s.virtio.Features&f.bit != 0 {
			q += "_" + f.name
		}
	}
	if s.virtio.BufSize != 0 {
		q += fmt.Sprintf("_buf%d", s.virtio.BufSize)
	}
	return mode + "_" + q
}

// bufsPerFrame is how many receive buffers a frame takes in the guest: more
// than one only with mergeable buffers smaller than the header and a frame.
func (s setup) bufsPerFrame() int {
	size := s.virtio.BufSize
	if s.virtio.Features&guest.FeatureMrgRxBuf == 0 || size == 0 {
		return 1
	}
	return (guest.HdrLen + traffic.FrameLen + size - 1) / size
}

// rig is one tap in a fresh namespace with a userspace vhost-net guest
// attached to each of its queues.
type rig struct {
	tb     testing.TB
	e      *netenv.Env
	link   netlink.Link
	taps   []*tuntap.Device
	guests []*guest.Net
	ring   int  // the tap's txqueuelen
	bufs   int  // receive buffers a frame takes (setup.bufsPerFrame)
	mrg    bool // the guests have mergeable receive buffers
	ctx    context.Context
}

// newRig builds the rig in a namespace of its own.
func newRig(tb testing.TB, s setup) *rig {
	tb.Helper()
	return newRigIn(tb, netenv.New(tb), s)
}

// newRigIn builds the rig in the namespace e, which outlives it when e
// belongs to a parent test. Probes decide the skips: IFF_BACKPRESSURE
// through TUNGETFEATURES, vhost-net by opening /dev/vhost-net, fq_codel by
// creating it. The kernel must not log a splat or gain a splat taint while
// the test runs.
func newRigIn(tb testing.TB, e *netenv.Env, s setup) *rig {
	tb.Helper()
	ctx := context.Background()
	if t, ok := tb.(*testing.T); ok {
		if d, ok := t.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, d.Add(-5*time.Second))
			tb.Cleanup(cancel)
		}
	}
	r := &rig{tb: tb, e: e, ring: ring, bufs: s.bufsPerFrame(), mrg: s.virtio.Features&guest.FeatureMrgRxBuf != 0, ctx: ctx}
	if s.ring != 0 {
		r.ring = s.ring
	}
	kmsg.Watch(tb)
	if s.backpressure {
		feature.Require(tb, tuntap.ProbeBackpressure())
	}
	queues := max(s.queues, 1)
	for range queues {
		cfg := s.virtio
		cfg.QueueSize = guestQueue
		g, err := guest.Open(cfg)
		feature.Require(tb, err)
		r.guests = append(r.guests, g)
		tb.Cleanup(func() { g.Close() })
	}
	flags := uint16(tuntap.IFFTap | tuntap.IFFNoPI | tuntap.IFFVnetHdr)
	if s.backpressure {
		flags |= tuntap.IFFBackpressure
	}
	if queues > 1 {
		flags |= tuntap.IFFMultiQueue
	}
	for range queues {
		var tap *tuntap.Device
		err := e.Do(func() (err error) {
			tap, err = tuntap.Open(tapName, flags)
			return err
		})
		assert.NilError(tb, err)
		tb.Cleanup(func() { tap.Close() })
		assert.NilError(tb, tap.SetVnetHdrSize(guest.HdrLen))
		got, err := tap.Flags()
		assert.NilError(tb, err)
		assert.Equal(tb, got&tuntap.IFFBackpressure, flags&tuntap.IFFBackpressure, "TUNGETIFF flags %#x after TUNSETIFF %#x", got, flags)
		r.taps = append(r.taps, tap)
	}
	r.configure(s.qdisc)
	if !s.lateBackend {
		for i := range r.guests {
			r.attach(i)
		}
	}
	return r
}

// configure sizes the tap's ring, installs the root qdisc (one of the
// qdisc* constants) and sets the tap up, in r.e.
func (r *rig) configure(qdisc string) {
	tb, e := r.tb, r.e
	tb.Helper()
	l := e.Link(tb, tapName)
	assert.NilError(tb, e.Handle.LinkSetTxQLen(l, r.ring))
	switch qdisc {
	case qdiscPfifo:
		e.Pfifo(tb, l, bigFIFO)
	case qdiscFqCodel:
		feature.Require(tb, e.FqCodel(l))
	}
	e.Up(tb, l)
	r.link = e.Link(tb, tapName)
}

// attach makes tap queue i the backend of guest i.
func (r *rig) attach(i int) {
	r.tb.Helper()
	assert.NilError(r.tb, r.guests[i].SetBackend(r.taps[i]))
}

// sender opens an AF_PACKET sender on the tap for stream.
func (r *rig) sender(stream uint32) *traffic.Sender {
	r.tb.Helper()
	var s *traffic.Sender
	err := r.e.Do(func() (err error) {
		s, err = traffic.NewSender(r.link.Attrs().Index, stream)
		return err
	})
	assert.NilError(r.tb, err)
	r.tb.Cleanup(func() { s.Close() })
	return s
}

// state is what the kernel says about the tap and its root qdisc.
type state struct {
	Link  counters.Link
	Qdisc counters.Qdisc
}

func (s state) String() string { return s.Link.String() + "; " + s.Qdisc.String() }

func (r *rig) state() (state, error) {
	l, err := counters.ReadLink(r.e.Handle, tapName)
	if err != nil {
		return state{}, err
	}
	q, err := counters.ReadRootQdisc(r.e, tapName)
	return state{Link: l, Qdisc: q}, err
}

// mustState reads the tap's state, failing the test if it cannot.
func (r *rig) mustState() state {
	r.tb.Helper()
	s, err := r.state()
	assert.NilError(r.tb, err)
	return s
}

// steadyWindow is how long the tap's counters must stay still for steady
// to call a wake-up finished.
const steadyWindow = 50 * time.Millisecond

// steady waits until the tap's state stops moving: a wake-up that is
// still moving frames from the qdisc into the ring (NET_TX softirq) must not
// be sampled half-way. Bounded by wait.
func (r *rig) steady() state {
	r.tb.Helper()
	s, err := counters.WaitSteady(r.ctx, wait, steadyWindow, r.state)
	assert.NilError(r.tb, err, "waiting for the tap's counters to settle")
	return s
}

// waitState waits until ok accepts the tap's state, failing the test with
// the last state seen.
func (r *rig) waitState(what string, ok func(state) bool) state {
	r.tb.Helper()
	s, err := counters.WaitFor(r.ctx, wait, r.state, ok)
	assert.NilError(r.tb, err, "waiting for %s", what)
	return s
}

// account is the ledger once the guests hold everything that was not
// dropped: nothing is left in the device.
func account(sent, received uint64, s state) counters.Accounting {
	return counters.Accounting{
		Sent:         sent,
		Received:     received,
		DeviceDrops:  s.Link.TxDropped,
		QdiscDrops:   s.Qdisc.Drops,
		QdiscBacklog: s.Qdisc.Qlen,
	}
}

// inDevice is what the ledger leaves for the device (the tap's ptr_ring
// plus the batch vhost holds) while frames are still in flight: it cannot
// be read from the kernel, so it is derived.
func inDevice(sent, received uint64, s state) int64 {
	return int64(sent) - int64(received) - int64(s.Link.TxDropped) - int64(s.Qdisc.Drops) - int64(s.Qdisc.Qlen)
}

// sendAll sends n frames and returns how many the kernel took (accepted +
// refused by the qdisc, which counts the refused as drops).
func sendAll(tb testing.TB, s *traffic.Sender, n int) uint64 {
	tb.Helper()
	res, err := s.Send(n)
	assert.NilError(tb, err)
	return res.Sent + res.Refused
}

// receiver checks every frame a guest receives: the 12-byte virtio-net
// header that tun wrote (no offloads), then exactly the frame that was sent,
// with sequence numbers increasing per stream (gaps are drops; a repeat or a
// step back is corruption).
type receiver struct {
	next  map[uint32]uint64
	got   uint64
	first error
	seqs  []uint64 // when recording, every sequence number of stream 0
	rec   bool
	// numBuffers is the header's num_buffers: with mergeable buffers the
	// buffers each frame took; else 1 where vhost writes it (VERSION_1)
	// and 0 where it does not.
	numBuffers []uint16
}

// receiver returns a receiver for the rig's guests, recording stream 0's
// sequence numbers when record is set.
func (r *rig) receiver(record bool) *receiver {
	rv := &receiver{next: map[uint32]uint64{}, rec: record, numBuffers: []uint16{0, 1}}
	if r.mrg {
		rv.numBuffers = []uint16{uint16(r.bufs)}
	}
	return rv
}

func (rv *receiver) check(data []byte) {
	rv.got++
	if rv.first != nil {
		return
	}
	if len(data) != guest.HdrLen+traffic.FrameLen {
		rv.first = fmt.Errorf("frame %d: %d bytes in the buffer, want %d header + %d frame", rv.got, len(data), guest.HdrLen, traffic.FrameLen)
		return
	}
	// struct virtio_net_hdr (10 bytes) all zero: no checksum or GSO;
	// then num_buffers (2 bytes, little endian).
	hdr, frame := data[:guest.HdrLen], data[guest.HdrLen:]
	if !bytes.Equal(hdr[:10], make([]byte, 10)) || !slices.Contains(rv.numBuffers, binary.LittleEndian.Uint16(hdr[10:])) {
		rv.first = fmt.Errorf("frame %d: virtio-net header % x, want zeros and num_buffers in %v", rv.got, hdr, rv.numBuffers)
		return
	}
	stream, seq, err := traffic.Parse(frame)
	if err != nil {
		rv.first = fmt.Errorf("frame %d: %w: % x", rv.got, err, frame)
		return
	}
	if want := traffic.Frame(traffic.SourceMAC(stream), stream, seq); !bytes.Equal(frame, want) {
		rv.first = fmt.Errorf("frame %d (stream %d seq %d) corrupted:\n got % x\nwant % x", rv.got, stream, seq, frame, want)
		return
	}
	if seq < rv.next[stream] {
		rv.first = fmt.Errorf("frame %d: stream %d seq %d after seq %d", rv.got, stream, seq, rv.next[stream]-1)
		return
	}
	rv.next[stream] = seq + 1
	if rv.rec && stream == 0 {
		rv.seqs = append(rv.seqs, seq)
	}
}

// collect takes what guest g has received, reposting every buffer it
// frees, until done accepts the receiver or wait passes; it fails the test
// with what it last saw.
func (r *rig) collect(g *guest.Net, rv *receiver, done func(*receiver) bool) {
	r.tb.Helper()
	r.receive(g, rv, -1, done)
}

// receive posts post buffers (all free ones, again after every collection,
// when post < 0) and collects what guest g receives until done accepts the
// receiver or wait passes.
func (r *rig) receive(g *guest.Net, rv *receiver, post int, done func(*receiver) bool) {
	r.tb.Helper()
	start := time.Now()
	deadline := start.Add(wait)
	if post >= 0 {
		_, err := g.Post(post)
		assert.NilError(r.tb, err)
	}
	for {
		if post < 0 {
			_, err := g.Post(g.RX.Free())
			assert.NilError(r.tb, err)
		}
		n, err := g.Receive(rv.check)
		assert.NilError(r.tb, err)
		assert.NilError(r.tb, rv.first)
		if done(rv) {
			margin.Note(wait, time.Since(start), false)
			return
		}
		if time.Now().After(deadline) || r.ctx.Err() != nil {
			margin.Note(wait, time.Since(start), true)
			s, _ := r.state()
			r.tb.Fatalf("guest stalled: received %d after %v, %d buffers posted; %v", rv.got, wait, g.RX.Posted(), s)
		}
		if n == 0 {
			_, err := g.WaitCall(5 * time.Millisecond)
			assert.NilError(r.tb, err)
		}
	}
}

// readTap reads up to n frames from tap queue file f directly (the tun
// read() path, not vhost), each with its virtio-net header, and returns
// their sequence numbers in order. It stops early when no frame comes for
// quiet.
func readTap(tb testing.TB, f *os.File, n int, quiet time.Duration) []uint64 {
	tb.Helper()
	buf := make([]byte, 65536)
	var seqs []uint64
	for len(seqs) < n {
		assert.NilError(tb, f.SetReadDeadline(time.Now().Add(quiet)))
		m, err := f.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		assert.NilError(tb, err, "read tap")
		assert.Assert(tb, m == guest.HdrLen+traffic.FrameLen, "read %d bytes from the tap, want %d", m, guest.HdrLen+traffic.FrameLen)
		_, seq, err := traffic.Parse(buf[guest.HdrLen:m])
		assert.NilError(tb, err)
		seqs = append(seqs, seq)
	}
	return seqs
}

// steerByStream attaches a steering program to the tap that sends stream s
// to queue s mod queues: it returns the low byte of the frame's stream
// field (offset 21), and tun takes it modulo the number of queues.
func (r *rig) steerByStream() {
	r.tb.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.SocketFilter,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.LoadAbs(21, asm.Byte),
			asm.Return(),
		},
	})
	assert.NilError(r.tb, err, "load the steering program")
	defer prog.Close()
	assert.NilError(r.tb, r.taps[0].SetSteeringEBPF(prog.FD()))
}

// packetSocket opens an AF_PACKET socket in the namespace that receives the
// test's frames arriving on the tap (what the guest transmits).
func (r *rig) packetSocket() int {
	r.tb.Helper()
	var fd int
	err := r.e.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(traffic.Htons(traffic.EtherType)))
		if err != nil {
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: traffic.Htons(traffic.EtherType), Ifindex: r.link.Attrs().Index})
	})
	assert.NilError(r.tb, err)
	r.tb.Cleanup(func() { unix.Close(fd) })
	tv := unix.NsecToTimeval((2 * time.Second).Nanoseconds())
	assert.NilError(r.tb, unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
	return fd
}

// recvFrames receives up to n incoming frames from packet socket fd,
// stopping when none comes for the socket's timeout.
func recvFrames(tb testing.TB, fd, n int) [][]byte {
	tb.Helper()
	var frames [][]byte
	buf := make([]byte, 65536)
	for len(frames) < n {
		m, from, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		assert.NilError(tb, err, "recvfrom")
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		frames = append(frames, append([]byte(nil), buf[:m]...))
	}
	return frames
}
