package tun

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// unwrapFunc returns the frames one read of a queue file carries, having
// checked what comes with them (tun's packet information, a virtio-net
// header, the headers of a TCP segment).
type unwrapFunc func(entry []byte) ([][]byte, error)

// entryReader reads a queue file whose reads are not plain frames: it
// unwraps each read (one ring entry) and gives the frames inside to a
// traffic.Reader's Record, so checkStreams follows their streams as on a
// plain tap. It reads the queue only when asked, as a traffic.Reader does,
// so an idle entryReader is an idle reader.
type entryReader struct {
	f      *os.File
	unwrap unwrapFunc
	r      *traffic.Reader // follows the unwrapped frames; reads no file
	buf    []byte
}

func newEntryReader(f *os.File, unwrap unwrapFunc) *entryReader {
	return &entryReader{f: f, unwrap: unwrap, r: traffic.NewReader(nil), buf: make([]byte, 1<<16)}
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
			if err := er.r.Record(fr); err != nil {
				return i, err
			}
		}
	}
	return n, nil
}
