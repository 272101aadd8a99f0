package tun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/traffic"
	"github.com/xmitcheck/xmitcheck/internal/tuntap"
)

// BenchmarkTap is the table of seed 000 for a tap: 1 and 2 sending
// threads, one reader, flag off with the qdisc the kernel attaches ("Stock")
// against flag on with fq_codel ("Patched with fq_codel qdisc"). One op is
// one frame sent; it reports rx_pps (frames read per second) and lost/s
// (tun and qdisc drops per second, also apart as tun_lost/s and
// qdisc_lost/s, which includes QDISC_BURST_DROP before the qdisc) over the time from the first send until every frame was
// read or counted as dropped. The AF_PACKET senders never block, so with
// the flag the losses move from tun to the qdisc rather than vanish.
func BenchmarkTap(b *testing.B) {
	for _, threads := range []int{1, 2} {
		for _, mode := range []string{"flag=off", "flag=on+fq_codel"} {
			b.Run(fmt.Sprintf("threads=%d/%s", threads, mode), func(b *testing.B) {
				o := tapOpts{ring: 500, root: "default"}
				if mode != "flag=off" {
					o.flags, o.root = tuntap.IFFBackpressure, "fq_codel"
				}
				benchTap(b, threads, o)
			})
		}
	}
}

func benchTap(b *testing.B, threads int, o tapOpts) {
	te := newTap(b, o)
	senders := make([]*traffic.Sender, threads)
	for i := range senders {
		senders[i] = te.sender(b, uint32(i+1))
	}
	burst := te.burstDrops(b)
	base, err := te.state()
	assert.NilError(b, err)

	var read atomic.Uint64
	stopRead := make(chan struct{})
	readErr := make(chan error, 1)
	go func() { readErr <- readLoop(te.dev.File, stopRead, &read) }()

	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	var sent atomic.Uint64
	sendErr := make(chan error, threads)
	for i, s := range senders {
		n := b.N / threads
		if i == 0 {
			n += b.N % threads
		}
		wg.Go(func() {
			res, err := s.Send(n)
			sent.Add(res.Sent + res.Refused)
			if err != nil {
				sendErr <- err
			}
		})
	}
	wg.Wait()
	total := sent.Load()
	st, werr := counters.WaitFor(context.Background(), waitLimit, te.sampler(burst), func(s sample) bool {
		return s.Q.Qlen == 0 && total == read.Load()+(s.Link.TxDropped-base.Link.TxDropped)+(s.Q.Drops-base.Q.Drops)+s.burst
	})
	elapsed := time.Since(start)
	b.StopTimer()
	close(stopRead)
	assert.NilError(b, <-readErr)
	close(sendErr)
	for err := range sendErr {
		assert.NilError(b, err)
	}
	assert.NilError(b, werr, "every frame accounted after the senders stopped")

	tunLost := st.Link.TxDropped - base.Link.TxDropped
	qdiscLost := st.Q.Drops - base.Q.Drops + st.burst
	secs := elapsed.Seconds()
	b.ReportMetric(float64(read.Load())/secs, "rx_pps")
	b.ReportMetric(float64(tunLost+qdiscLost)/secs, "lost/s")
	b.ReportMetric(float64(tunLost)/secs, "tun_lost/s")
	b.ReportMetric(float64(qdiscLost)/secs, "qdisc_lost/s")
	b.Logf("qdisc %s, %d sent, %d read, %d dropped by tun, %d by the qdisc in %v", st.Q.Kind, total, read.Load(), tunLost, qdiscLost, elapsed)
}

// readLoop reads frames from f until stop is closed, counting them in n. It
// waits through the runtime poller instead of setting a deadline per frame,
// so the reader costs little more than its read(2) calls.
func readLoop(f *os.File, stop <-chan struct{}, n *atomic.Uint64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	go func() {
		<-stop
		f.SetReadDeadline(time.Now())
	}()
	buf := make([]byte, 2048)
	for {
		var m int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			m, rerr = unix.Read(int(fd), buf)
			return !errors.Is(rerr, unix.EAGAIN)
		})
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err = errors.Join(err, rerr); err != nil {
			return fmt.Errorf("read %s: %w", f.Name(), err)
		}
		if _, _, err := traffic.Parse(buf[:m]); err != nil {
			return err
		}
		n.Add(1)
	}
}
