package traffic

import (
	"errors"
	"io"
	"os"
	"time"
)

// Reader reads frames from a tun/tap queue file and checks each is ours.
type Reader struct {
	f   *os.File
	buf []byte
	// Seen counts frames read, per stream.
	Seen map[uint32]uint64
}

// NewReader reads from f, which must honour read deadlines (tuntap.Device).
func NewReader(f *os.File) *Reader {
	return &Reader{f: f, buf: make([]byte, 65536), Seen: map[uint32]uint64{}}
}

// Read reads up to n frames, waiting at most wait for each one. It returns
// how many it read; a frame that is not ours is an error (something other
// than the test is sending).
func (r *Reader) Read(n int, wait time.Duration) (int, error) {
	for i := range n {
		if err := r.f.SetReadDeadline(time.Now().Add(wait)); err != nil {
			return i, err
		}
		m, err := r.f.Read(r.buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return i, nil
		}
		if err != nil {
			return i, err
		}
		stream, _, err := Parse(r.buf[:m])
		if err != nil {
			return i, err
		}
		r.Seen[stream]++
	}
	return n, nil
}

// Drain reads until no frame arrives for quiet, and returns how many it read.
func (r *Reader) Drain(quiet time.Duration) (int, error) {
	total := 0
	for {
		n, err := r.Read(1024, quiet)
		total += n
		if err != nil && !errors.Is(err, io.EOF) {
			return total, err
		}
		if n < 1024 {
			return total, nil
		}
	}
}
