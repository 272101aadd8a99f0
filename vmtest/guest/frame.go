package guest

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Frame kinds. The native guest writes output frames to OutPort and
// control frames to CtlPort; under vng both share stdout.
const (
	// FrameOut carries output of binary Bin.
	FrameOut = 'o'
	// FrameCtl carries one JSON-encoded Event.
	FrameCtl = 'c'
)

// Frame is one tagged chunk of a stream. On the wire: kind (1 byte), Bin
// (2 bytes, big endian), payload length (4 bytes, big endian), payload.
type Frame struct {
	Kind byte
	Bin  int
	Data []byte
}

const frameHeader = 7

// WriteFrame writes f in one write.
func WriteFrame(w io.Writer, f Frame) error {
	buf := make([]byte, frameHeader+len(f.Data))
	buf[0] = f.Kind
	binary.BigEndian.PutUint16(buf[1:], uint16(f.Bin))
	binary.BigEndian.PutUint32(buf[3:], uint32(len(f.Data)))
	copy(buf[frameHeader:], f.Data)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame. It returns io.EOF only at a frame boundary.
func ReadFrame(r io.Reader) (Frame, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return Frame{}, fmt.Errorf("framed stream cut inside a header")
		}
		return Frame{}, err
	}
	if h[0] != FrameOut && h[0] != FrameCtl {
		return Frame{}, fmt.Errorf("framed stream: unknown frame kind %q (is something else writing to the stream?)", h[0])
	}
	n := binary.BigEndian.Uint32(h[3:])
	if n > 1<<24 {
		return Frame{}, fmt.Errorf("framed stream: frame of %d bytes is too large", n)
	}
	f := Frame{Kind: h[0], Bin: int(binary.BigEndian.Uint16(h[1:])), Data: make([]byte, n)}
	if _, err := io.ReadFull(r, f.Data); err != nil {
		return Frame{}, fmt.Errorf("framed stream cut inside a %d-byte frame: %w", n, err)
	}
	return f, nil
}
