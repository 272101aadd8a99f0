package guest

import (
	"encoding/json"
	"io"
)

// sender carries the two streams to the host and counts output bytes.
type sender interface {
	// Output sends binary output; it fails only when the host is gone.
	Output(p []byte) error
	// Event sends one control event.
	Event(ev Event) error
	// Offset is the number of output bytes sent so far.
	Offset() int64
}

// portSender writes output and events to two virtio-serial ports.
type portSender struct {
	out, ctl io.Writer
	off      int64
}

func (s *portSender) Output(p []byte) error {
	n, err := s.out.Write(p)
	s.off += int64(n)
	return err
}

func (s *portSender) Event(ev Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	_, err = s.ctl.Write(append(b, '\n'))
	return err
}

func (s *portSender) Offset() int64 { return s.off }

// framedSender writes both streams as frames to one writer.
type framedSender struct {
	w   io.Writer
	off int64
}

func (s *framedSender) Output(p []byte) error {
	if err := WriteFrame(s.w, FrameOut, p); err != nil {
		return err
	}
	s.off += int64(len(p))
	return nil
}

func (s *framedSender) Event(ev Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return WriteFrame(s.w, FrameCtl, b)
}

func (s *framedSender) Offset() int64 { return s.off }
