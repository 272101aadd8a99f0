package guest

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Frame kinds of the framed stream (vng backend): both streams share one
// pipe there, so each write is tagged with its stream.
const (
	FrameOut = 'o'
	FrameCtl = 'c'
)

// frameHeader is kind (1 byte) then payload length (4 bytes, big endian).
const frameHeader = 5

// WriteFrame writes one frame of kind with payload p.
func WriteFrame(w io.Writer, kind byte, p []byte) error {
	buf := make([]byte, frameHeader+len(p))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:], uint32(len(p)))
	copy(buf[frameHeader:], p)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame. It returns io.EOF only at a frame boundary.
func ReadFrame(r io.Reader) (kind byte, p []byte, err error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return 0, nil, fmt.Errorf("framed stream cut inside a header")
		}
		return 0, nil, err
	}
	if h[0] != FrameOut && h[0] != FrameCtl {
		return 0, nil, fmt.Errorf("framed stream: unknown frame kind %q (is something else writing to stdout?)", h[0])
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > 1<<24 {
		return 0, nil, fmt.Errorf("framed stream: frame of %d bytes is too large", n)
	}
	p = make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, fmt.Errorf("framed stream cut inside a %d-byte frame: %w", n, err)
	}
	return h[0], p, nil
}
