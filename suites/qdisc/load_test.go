package qdisc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// batch is how many frames a sender hands over per Send call.
const batch = 32

// load is N sender threads, each with its own AF_PACKET socket and stream
// (streams lo..lo+N-1), sending through one device until stopped or until
// a shared budget of frames is spent.
type load struct {
	lo, hi uint32
	// handed counts frames the kernel took (sent or refused with ENOBUFS
	// after the qdisc dropped them); down counts sends refused with
	// ENETDOWN, which never reached the qdisc.
	handed, down atomic.Uint64
	budget       atomic.Int64
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	// done is closed when every sender has returned.
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// loadOpts shapes a load.
type loadOpts struct {
	senders int
	stream  uint32 // first stream number
	// frames is the budget shared by all senders; 0 sends until stopped.
	frames int64
	// duration stops the senders after this long (a hard stop with a
	// budget too).
	duration time.Duration
	// tolerateDown keeps senders going through ENETDOWN (link down/up).
	tolerateDown bool
}

// startLoad opens the sockets inside the rig's namespace and starts the
// sender threads.
func startLoad(tb testing.TB, r *rig, o loadOpts) *load {
	tb.Helper()
	if o.stream+uint32(o.senders) > maxStream {
		tb.Fatalf("streams %d..%d do not fit the %d counter slots", o.stream, o.stream+uint32(o.senders), maxStream)
	}
	ss := make([]*traffic.Sender, o.senders)
	err := r.e.Do(func() error {
		for i := range ss {
			s, err := traffic.NewSender(r.dev.Attrs().Index, o.stream+uint32(i))
			if err != nil {
				return err
			}
			ss[i] = s
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("open sender sockets on %s: %v", r.dev.Attrs().Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	l := &load{lo: o.stream, hi: o.stream + uint32(o.senders), cancel: cancel, done: make(chan struct{})}
	if o.frames > 0 {
		l.budget.Store(o.frames)
	} else {
		l.budget.Store(1 << 62)
	}
	for _, s := range ss {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer s.Close()
			l.send(ctx, s, o.tolerateDown)
		}()
	}
	go func() { l.wg.Wait(); close(l.done) }()
	tb.Cleanup(func() { l.stop() })
	return l
}

// send hands frames to s until ctx ends, the budget is spent or a send
// fails (ENETDOWN goes on where tolerateDown).
func (l *load) send(ctx context.Context, s *traffic.Sender, tolerateDown bool) {
	// One OS thread per sender: N senders contend for the qdisc lock from
	// N threads, which is what seed 003 is about.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for ctx.Err() == nil {
		n := l.claim(batch)
		if n == 0 {
			return
		}
		res, err := s.Send(n)
		l.handed.Add(res.Sent + res.Refused)
		// Frames Send did not get to go back to the budget.
		if left := uint64(n) - res.Sent - res.Refused; left > 0 {
			l.budget.Add(int64(left))
		}
		switch {
		case err == nil:
		case tolerateDown && errors.Is(err, unix.ENETDOWN):
			l.down.Add(1)
		default:
			l.fail(err)
			return
		}
	}
}

func (l *load) claim(n int) int {
	for {
		left := l.budget.Load()
		if left <= 0 {
			return 0
		}
		k := min(int64(n), left)
		if l.budget.CompareAndSwap(left, left-k) {
			return int(k)
		}
	}
}

func (l *load) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// wait waits for the senders to finish by themselves (budget spent or
// duration over) and returns how many frames they handed to the kernel.
func (l *load) wait() (uint64, error) {
	l.wg.Wait()
	l.cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.handed.Load(), fmt.Errorf("sender: %w", l.err)
	}
	return l.handed.Load(), nil
}

// stop stops the senders now and returns what wait returns.
func (l *load) stop() (uint64, error) {
	l.cancel()
	return l.wait()
}
