package tun

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// unwrapFunc returns the frames one read of a queue file carries, having
// checked what comes with them (tun's packet information, a virtio-net
// header, the headers of a TCP segment).
type unwrapFunc func(entry []byte) ([][]byte, error)

// entryReader reads a queue file whose reads are not plain frames: it
// unwraps each read (one ring entry) and hands the frames inside to a
// traffic.Reader through a SOCK_SEQPACKET pair, so checkStreams follows
// their streams as on a plain tap. It reads the queue only when asked, as
// a traffic.Reader does, so an idle entryReader is an idle reader.
type entryReader struct {
	f      *os.File
	unwrap unwrapFunc
	in     int             // the pair's end the frames are written to
	r      *traffic.Reader // reads the pair's other end
	buf    []byte
}

func newEntryReader(t testing.TB, f *os.File, unwrap unwrapFunc) *entryReader {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	assert.NilError(t, err, "socketpair for the unwrapped frames")
	out := os.NewFile(uintptr(fds[1]), "unwrapped frames")
	t.Cleanup(func() {
		unix.Close(fds[0])
		out.Close()
	})
	return &entryReader{f: f, unwrap: unwrap, in: fds[0], r: traffic.NewReader(out), buf: make([]byte, 1<<16)}
}

// Read reads up to n entries, waiting at most wait for each, and returns
// how many it read.
func (er *entryReader) Read(n int, wait time.Duration) (int, error) {
	for i := range n {
		if err := er.f.SetReadDeadline(time.Now().Add(wait)); err != nil {
			return i, err
		}
		m, err := er.f.Read(er.buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return i, nil
		}
		if err != nil {
			return i, err
		}
		frames, err := er.unwrap(er.buf[:m])
		if err != nil {
			return i, fmt.Errorf("entry %d: %w", er.r.Total(), err)
		}
		for _, fr := range frames {
			if _, err := unix.Write(er.in, fr); err != nil {
				return i, fmt.Errorf("pass a frame on: %w", err)
			}
		}
		// The frames are in the pair already: no wait.
		got, err := er.r.Read(len(frames), time.Second)
		if err != nil {
			return i, err
		}
		if got != len(frames) {
			return i, fmt.Errorf("passed %d frames on, read back %d", len(frames), got)
		}
	}
	return n, nil
}

// Drain reads entries until none comes for quiet and returns how many.
func (er *entryReader) Drain(quiet time.Duration) (int, error) {
	total := 0
	for {
		n, err := er.Read(1024, quiet)
		total += n
		if err != nil || n < 1024 {
			return total, err
		}
	}
}
