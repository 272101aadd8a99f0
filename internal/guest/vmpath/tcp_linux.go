package vmpath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
)

const (
	// connectLimit bounds connecting and accepting every stream.
	connectLimit = 10 * time.Second
	// drainLimit bounds each receiver's wait for more of what its sender
	// wrote before Finish calls the path stalled.
	drainLimit = 10 * time.Second
	// writeSize is each sender's write(2), iperf3's default for TCP.
	writeSize = 128 << 10
	// readSize is each receiver's read(2).
	readSize = 256 << 10
)

// Streams are TCP connections from H to G across the path, each with a
// sender in H that writes as fast as it can while Send runs and a
// receiver in G that reads and counts from the start.
type Streams struct {
	tb testing.TB
	// out are the senders' connections, in the order of in, the
	// receivers' (accepted in G).
	out, in []*net.TCPConn
	// got counts what each receiver read; wrote what each sender wrote.
	got   []atomic.Uint64
	wrote []uint64
	// readers ends once every receiver has read to the end of its
	// stream, or failed (readErr).
	readers sync.WaitGroup
	readErr []error
}

// Streams connects n streams from H to a listener in G and starts their
// receivers; the streams close with tb's cleanup.
func (p *Path) Streams(tb testing.TB, n int) *Streams {
	tb.Helper()
	s := &Streams{tb: tb, got: make([]atomic.Uint64, n), wrote: make([]uint64, n), readErr: make([]error, n)}
	var ln *net.TCPListener
	assert.NilError(tb, p.G.Do(func() (err error) {
		ln, err = net.ListenTCP("tcp4", &net.TCPAddr{IP: guestIP()})
		return err
	}), "listen on %v in G", GuestAddr.Addr())
	defer ln.Close()
	assert.NilError(tb, ln.SetDeadline(time.Now().Add(connectLimit)))
	tb.Cleanup(s.close)
	d := net.Dialer{Timeout: connectLimit}
	for i := range n {
		assert.NilError(tb, p.H.Do(func() error {
			c, err := d.DialContext(context.Background(), "tcp4", ln.Addr().String())
			if err == nil {
				s.out = append(s.out, c.(*net.TCPConn))
			}
			return err
		}), "connect stream %d from H to %v", i, ln.Addr())
		c, err := ln.AcceptTCP()
		assert.NilError(tb, err, "accept stream %d in G", i)
		s.in = append(s.in, c)
		assert.Equal(tb, c.RemoteAddr().String(), s.out[i].LocalAddr().String(),
			"stream %d: the connection accepted is not the one just made", i)
	}
	for i := range s.in {
		s.readers.Go(func() { s.readErr[i] = s.read(i) })
	}
	return s
}

// read counts what receiver i reads until its stream ends.
func (s *Streams) read(i int) error {
	buf := make([]byte, readSize)
	for {
		n, err := s.in[i].Read(buf)
		s.got[i].Add(uint64(n))
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// received is what the receivers read so far, all streams together.
func (s *Streams) received() uint64 {
	var sum uint64
	for i := range s.got {
		sum += s.got[i].Load()
	}
	return sum
}

// Send has every sender write for d and returns what the window moved.
// The window ends when d has passed: the receivers' count is taken then,
// and the senders' writes stop at that deadline.
func (s *Streams) Send(d time.Duration) (Window, error) {
	retrans0, err := s.retrans()
	if err != nil {
		return Window{}, err
	}
	errs := make([]error, len(s.out))
	wrote := make([]uint64, len(s.out))
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	rx0 := s.received()
	for i, c := range s.out {
		if err := c.SetWriteDeadline(end); err != nil {
			return Window{}, err
		}
		wg.Go(func() { wrote[i], errs[i] = write(c) })
	}
	time.Sleep(time.Until(end))
	w := Window{Bytes: s.received() - rx0, Took: time.Since(start)}
	if err := waitGroup(&wg, connectLimit); err != nil {
		return w, fmt.Errorf("senders: %w", err)
	}
	for i, n := range wrote {
		s.wrote[i] += n
	}
	if err := errors.Join(errs...); err != nil {
		return w, err
	}
	retrans, err := s.retrans()
	w.Retrans = retrans - retrans0
	return w, err
}

// write writes to c until its write deadline, and returns how many bytes
// it wrote.
func write(c *net.TCPConn) (uint64, error) {
	buf := make([]byte, writeSize)
	var total uint64
	for {
		n, err := c.Write(buf)
		total += uint64(n)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// retrans sums the senders' retransmitted segments (tcpi_total_retrans).
func (s *Streams) retrans() (uint64, error) {
	var sum uint64
	for i, c := range s.out {
		rc, err := c.SyscallConn()
		if err != nil {
			return 0, err
		}
		var info *unix.TCPInfo
		var ierr error
		err = rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.SOL_TCP, unix.TCP_INFO) })
		if err != nil {
			return 0, err
		}
		if ierr != nil {
			return 0, fmt.Errorf("TCP_INFO of stream %d: %w", i, ierr)
		}
		sum += uint64(info.Total_retrans)
	}
	return sum, nil
}

// Finish ends every stream (the senders shut their side) and checks that
// each receiver read exactly what its sender wrote. A receiver may wait
// for the rest of its stream as long as bytes keep coming, drainLimit at
// most between two.
func (s *Streams) Finish() {
	s.tb.Helper()
	for i, c := range s.out {
		assert.NilError(s.tb, c.CloseWrite(), "shut stream %d's sending side", i)
	}
	done := make(chan struct{})
	go func() { s.readers.Wait(); close(done) }()
	last, since := s.received(), time.Now()
	for tick := time.NewTicker(100 * time.Millisecond); ; {
		select {
		case <-done:
			tick.Stop()
			s.check()
			return
		case <-tick.C:
		}
		if now := s.received(); now != last {
			last, since = now, time.Now()
		}
		if time.Since(since) > drainLimit {
			tick.Stop()
			s.tb.Fatalf("vmpath: no byte arrived for %v after the senders stopped: %s", drainLimit, s.ledger())
		}
	}
}

// check holds every stream's receiver to its sender: it read exactly
// what was written, and ended on the sender's shutdown.
func (s *Streams) check() {
	s.tb.Helper()
	for i := range s.in {
		assert.Check(s.tb, s.readErr[i], "receiver %d", i)
		assert.Check(s.tb, s.got[i].Load() == s.wrote[i], "stream %d: the receiver read %d bytes, its sender wrote %d; %s",
			i, s.got[i].Load(), s.wrote[i], s.ledger())
	}
}

// ledger is every stream's bytes written against bytes read.
func (s *Streams) ledger() string {
	l := "written → read:"
	for i := range s.in {
		l += fmt.Sprintf(" stream %d %d → %d;", i, s.wrote[i], s.got[i].Load())
	}
	return l
}

// close closes every connection and waits for the receivers.
func (s *Streams) close() {
	for _, c := range s.out {
		c.Close()
	}
	for _, c := range s.in {
		c.Close()
	}
	if err := waitGroup(&s.readers, connectLimit); err != nil {
		s.tb.Errorf("vmpath: receivers: %v", err)
	}
}

// waitGroup waits for wg at most limit.
func waitGroup(wg *sync.WaitGroup, limit time.Duration) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(limit):
		return fmt.Errorf("still running after %v", limit)
	}
}
