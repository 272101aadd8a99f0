package guest

import (
	"encoding/json"
	"io"
)

// sender carries output frames and control events to the host.
type sender interface {
	// Output sends output of binary bin; it fails only when the host is
	// gone.
	Output(bin int, p []byte) error
	// Event sends one control event.
	Event(ev Event) error
}

// portSender writes output frames to one virtio-serial port and events to
// another.
type portSender struct {
	out, ctl io.Writer
}

func (s *portSender) Output(bin int, p []byte) error {
	return WriteFrame(s.out, Frame{Kind: FrameOut, Bin: bin, Data: p})
}

func (s *portSender) Event(ev Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	_, err = s.ctl.Write(append(b, '\n'))
	return err
}

// framedSender writes output and events as frames to one writer.
type framedSender struct {
	w io.Writer
}

func (s *framedSender) Output(bin int, p []byte) error {
	return WriteFrame(s.w, Frame{Kind: FrameOut, Bin: bin, Data: p})
}

func (s *framedSender) Event(ev Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return WriteFrame(s.w, Frame{Kind: FrameCtl, Data: b})
}
