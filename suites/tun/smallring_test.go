package tun

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/cpus"
	"github.com/xmitcheck/xmitcheck/internal/guest/kcsan"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/taprace"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
	"github.com/xmitcheck/xmitcheck/internal/guest/tunwake"
)

const (
	// smallRingFor is how long the sender races the reader on each ring
	// (longer under KCSAN: kcsan.For).
	smallRingFor = 3 * time.Second
	// suspectEvery is the window in which a polling reader must get a
	// frame while the qdisc holds some; a window without one is looked at
	// for stallBound more.
	suspectEvery = 50 * time.Millisecond
	// stallBound is how long nothing may be delivered after a suspicious
	// window, the ring empty and the qdisc holding frames: a stall is
	// for good, anything else moves within milliseconds.
	stallBound = time.Second
)

// smallRings are the rings raced: with 1 slot every frame fills the ring,
// and a reader must empty it in one read inside the producer's window.
var smallRings = []int{1, 2, 4}

// TestRaceSmallRing races seed 000's handshake where it can fail: one
// sender against a reader that polls without sleeping, on another CPU,
// over the smallest rings. tun_net_xmit() stops the queue when its
// produce filled the ring, then, after smp_mb__after_atomic(), looks at
// the ring again and wakes the queue if a reader emptied it meanwhile: a
// reader that consumed the last frame between the producer's "full" check
// and its stop saw the queue running and did not wake it. Without that
// second look the queue stays stopped over an empty ring: a stall, which
// tun has no watchdog to undo. A stall is nothing delivered for
// suspectEvery+stallBound while the reader keeps finding the ring empty
// and the qdisc holds frames; the race stops at the first. Every frame
// must be accounted for, each stream arrive in order, and tun drop no more
// frames than wakes came over a full ring (internal/guest/tunwake): the
// one race the seed leaves, where a consumer's wake undoes a newer stop.
// docs/design/tun-race-small-ring.md has the window and the measurements.
func TestRaceSmallRing(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, ring := range smallRings {
		t.Run(fmt.Sprintf("ring=%d", ring), func(t *testing.T) { raceSmallRing(t, ring) })
	}
}

func raceSmallRing(t *testing.T, ring int) {
	// A P for the sender, the reader and this goroutine, which watches.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 4)))
	o := tapOpts{ring: ring, limit: 1000, flags: tuntap.IFFBackpressure}
	fx := fill(t, o, o.ring+raceHeld)
	where, err := place(1)
	assert.NilError(t, err)
	sr := &taprace.SmallRing{
		Sender: fx.s, SenderCPU: where.senders[0],
		Read:  fx.counted,
		Burst: fx.burstDrops(t),
		Every: suspectEvery, Bound: stallBound, Limit: waitLimit,
	}
	tr := tunwake.Trace(t, int(fx.e.NS), fx.ifindex)
	sr.Sent.Store(fx.res.Handed())
	p := startPoller(t, fx.dev.File, where.reader)
	sr.Consumer = p
	raced := kcsan.Watch(t, feature.Seed000Tun)

	res := sr.Race(t, kcsan.For(smallRingFor))
	st, start := res.Stall, res.Start

	l, last := sr.Settle(t, st != nil)
	secs := res.Took.Seconds()
	t.Logf("ring=%d: %.0f sent/s, %.0f read/s, %d empty reads; %d windows of %v without delivery that moved again; %v",
		ring, float64(l.Sent)/secs, float64(l.Received)/secs, p.empty.Load(), res.Suspects, suspectEvery, l)
	if st != nil {
		t.Errorf("stall (ring=%d): nothing delivered for %v with the ring empty (%d empty reads) and the qdisc "+
			"holding %d, from %v into the race, seen at %v; %v; %v",
			ring, st.Seen.Sub(st.Since).Round(time.Millisecond), st.Obs.Idle-st.From.Idle, st.Obs.Ledger.QdiscBacklog,
			st.Since.Sub(start).Round(time.Millisecond), st.Seen.Sub(start).Round(time.Millisecond), st.Obs.State, l)
	}
	assert.Assert(t, l.Balanced(), "%v", l)
	checkStreams(t, l, sentBy(fx.s), p.r)
	w := tunwake.CheckDrops(t, tr, last.Ledger.DeviceDrops-fx.st.Link.TxDropped, l)
	raced(w.All)
}

// counted reads the tap's and its qdisc's counters for taprace.
func (rig *tapRig) counted() (taprace.Counted, error) {
	st, err := rig.state()
	return taprace.Counted{Ledger: account(0, 0, st, 0), Delivered: st.Link.TxPackets, State: st}, err
}

// poller reads a queue file in a loop of non-blocking reads on a CPU of its
// own, never sleeping, so that it can empty a small ring inside the
// producer's window between "the ring is full" and the queue's stop: a
// reader that blocks is woken only by sk_data_ready, which tun calls after
// the stop. It reads through a dup of the file's descriptor (tuntap.Open's,
// non-blocking), out of the runtime's poller.
type poller struct {
	r     *traffic.Reader
	empty atomic.Uint64 // reads that found the ring empty
	loop  *cpus.Loop
}

// pollerYield is how many reads go raw between two through the runtime,
// which let a stop of the world take the reader's P.
const pollerYield = 64

func startPoller(t *testing.T, f *os.File, cpu int) *poller {
	rc, err := f.SyscallConn()
	assert.NilError(t, err)
	fd, derr := -1, error(nil)
	assert.NilError(t, rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }))
	assert.NilError(t, derr, "dup %s", f.Name())
	p := &poller{r: traffic.NewReader(nil)}
	p.loop = cpus.Start(cpu, func(stopped func() bool) error { return p.poll(fd, f.Name(), stopped) })
	t.Cleanup(func() {
		p.close()
		unix.Close(fd)
	})
	return p
}

func (p *poller) poll(fd int, name string, stopped func() bool) error {
	buf := make([]byte, 65536)
	for i := 0; !stopped(); i++ {
		read := syscall.RawSyscall
		if i%pollerYield == 0 {
			read = syscall.Syscall
		}
		m, _, errno := read(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		switch errno {
		case 0:
			if err := p.r.Record(buf[:m]); err != nil {
				return err
			}
		case unix.EAGAIN, unix.EINTR:
			p.empty.Add(1)
		default:
			return fmt.Errorf("read %s: %w", name, errno)
		}
	}
	return nil
}

// close stops the reader and returns its error; later calls return the
// same.
func (p *poller) close() error { return p.loop.Stop() }

// Got is how many frames the reader read so far (taprace.Consumer).
func (p *poller) Got() uint64 { return p.r.Total() }

// Stop stops the reader and returns every frame it read, and its error
// (taprace.Consumer).
func (p *poller) Stop() (uint64, error) {
	err := p.close()
	return p.r.Total(), err
}

// Idle is how many reads found the ring empty so far (taprace.Poller).
func (p *poller) Idle() uint64 { return p.empty.Load() }
