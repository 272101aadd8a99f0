package vmtest

import (
	"fmt"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/vmtest/guest"
)

// recorder is a Sink that writes down every call.
type recorder struct {
	calls  []string
	output map[string]*strings.Builder
	splats []Splat
}

func newRecorder() *recorder { return &recorder{output: map[string]*strings.Builder{}} }

func (r *recorder) Start(b Binary) {
	r.calls = append(r.calls, "start "+b.Name)
	r.output[b.Name] = &strings.Builder{}
}

func (r *recorder) Output(b Binary, p []byte) {
	r.calls = append(r.calls, fmt.Sprintf("output %s %q", b.Name, p))
	r.output[b.Name].Write(p)
}

// out is the output of binary name so far.
func (r *recorder) out(name string) string {
	if b := r.output[name]; b != nil {
		return b.String()
	}
	return ""
}

func (r *recorder) Exit(b Binary, code int) {
	r.calls = append(r.calls, fmt.Sprintf("exit %s %d", b.Name, code))
}
func (r *recorder) Splat(s Splat) { r.splats = append(r.splats, s) }

func TestDemuxOrdersStreams(t *testing.T) {
	bins := []Binary{{Name: "a"}, {Name: "b"}}
	ev := func(kind string, bin int, code int, off int64) guest.Event {
		return guest.Event{Ev: kind, Bin: bin, Code: code, Off: off}
	}
	out := func(bin int, s string) guest.Frame {
		return guest.Frame{Kind: guest.FrameOut, Bin: bin, Data: []byte(s)}
	}
	want := []string{`start a`, `output a "hello a"`, `exit a 0`, `start b`, `output b "bye"`, `exit b 7`}
	for _, tc := range []struct {
		name  string
		steps []any // guest.Frame for output, guest.Event for control
	}{
		{"in order", []any{
			ev(guest.EvHello, 0, 0, 0), ev(guest.EvStart, 0, 0, 0), out(0, "hello "), out(0, "a"),
			ev(guest.EvExit, 0, 0, 7), ev(guest.EvStart, 1, 0, 0), out(1, "bye"), ev(guest.EvExit, 1, 7, 3),
			ev(guest.EvDone, 0, 0, 0),
		}},
		{"control stream ahead", []any{
			ev(guest.EvHello, 0, 0, 0), ev(guest.EvStart, 0, 0, 0), ev(guest.EvExit, 0, 0, 7), ev(guest.EvStart, 1, 0, 0),
			ev(guest.EvExit, 1, 7, 3), ev(guest.EvDone, 0, 0, 0), out(0, "hello "), out(0, "a"), out(1, "bye"),
		}},
		{"output stream ahead", []any{
			out(0, "hello a"), out(1, "bye"), ev(guest.EvHello, 0, 0, 0), ev(guest.EvStart, 0, 0, 0),
			ev(guest.EvExit, 0, 0, 7), ev(guest.EvStart, 1, 0, 0), ev(guest.EvExit, 1, 7, 3), ev(guest.EvDone, 0, 0, 0),
		}},
		{"next binary's output before the exit", []any{
			ev(guest.EvHello, 0, 0, 0), ev(guest.EvStart, 0, 0, 0), out(0, "hello a"), out(1, "bye"),
			ev(guest.EvExit, 0, 0, 7), ev(guest.EvStart, 1, 0, 0), ev(guest.EvExit, 1, 7, 3), ev(guest.EvDone, 0, 0, 0),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			d := newDemux(r, bins)
			for _, s := range tc.steps {
				switch s := s.(type) {
				case guest.Frame:
					d.output(s.Bin, s.Data)
				case guest.Event:
					d.event(s)
				}
			}
			assert.Check(t, d.done)
			assert.Check(t, is.Equal(d.lost(), int64(0)))
			assert.Check(t, is.Equal(d.guestErr, ""))
			// The chunking of output may differ; the order of starts,
			// exits and bytes may not.
			assert.Check(t, is.DeepEqual(normalize(r.calls), want))
		})
	}
}

// normalize merges consecutive outputs of one binary.
func normalize(calls []string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, "output ") && len(out) > 0 && strings.HasPrefix(out[len(out)-1], "output ") {
			var b1, b2, p1, p2 string
			fmt.Sscanf(out[len(out)-1], "output %s %q", &b1, &p1)
			fmt.Sscanf(c, "output %s %q", &b2, &p2)
			if b1 == b2 {
				out[len(out)-1] = fmt.Sprintf("output %s %q", b1, p1+p2)
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

func TestDemuxReportsLostOutput(t *testing.T) {
	r := newRecorder()
	d := newDemux(r, []Binary{{Name: "a"}})
	d.event(guest.Event{Ev: guest.EvHello})
	d.event(guest.Event{Ev: guest.EvStart, Bin: 0})
	d.output(0, []byte("12"))
	d.event(guest.Event{Ev: guest.EvExit, Bin: 0, Off: 5})
	assert.Check(t, is.Equal(d.lost(), int64(3)))
	assert.Check(t, is.DeepEqual(r.calls, []string{"start a", `output a "12"`}), "no exit before all output")
	assert.Check(t, is.Equal(d.running(), "a"))
}

func TestDemuxRejectsBadIndex(t *testing.T) {
	d := newDemux(newRecorder(), []Binary{{Name: "a"}})
	d.event(guest.Event{Ev: guest.EvStart, Bin: 3})
	assert.Check(t, is.Contains(d.guestErr, "binary 3 of 1"))
}
