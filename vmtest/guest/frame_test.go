package guest

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestFramedSenderRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	s := &framedSender{w: &buf}
	assert.NilError(t, s.Event(Event{Ev: EvStart, Bin: 1}))
	assert.NilError(t, s.Output(1, []byte("out\x00put")))
	assert.NilError(t, s.Output(1, nil))
	assert.NilError(t, s.Event(Event{Ev: EvExit, Bin: 1, Code: 3, Off: 7}))

	f, err := ReadFrame(&buf)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(f.Kind, byte(FrameCtl)))
	var ev Event
	assert.NilError(t, json.Unmarshal(f.Data, &ev))
	assert.Check(t, is.DeepEqual(ev, Event{Ev: EvStart, Bin: 1}))

	f, err = ReadFrame(&buf)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(f, Frame{Kind: FrameOut, Bin: 1, Data: []byte("out\x00put")}))

	f, err = ReadFrame(&buf)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(f.Kind, byte(FrameOut)))
	assert.Check(t, is.Len(f.Data, 0))

	f, err = ReadFrame(&buf)
	assert.NilError(t, err)
	assert.NilError(t, json.Unmarshal(f.Data, &ev))
	assert.Check(t, is.DeepEqual(ev, Event{Ev: EvExit, Bin: 1, Code: 3, Off: 7}))

	_, err = ReadFrame(&buf)
	assert.Check(t, is.Equal(err, io.EOF))
}

func TestReadFrameRejectsForeignBytes(t *testing.T) {
	_, err := ReadFrame(bytes.NewReader([]byte("hello world")))
	assert.ErrorContains(t, err, "unknown frame kind")
	_, err = ReadFrame(bytes.NewReader([]byte{FrameOut, 0, 0, 0, 0, 0, 9, 'x'}))
	assert.ErrorContains(t, err, "cut inside a 9-byte frame")
}

func TestSpecEncoding(t *testing.T) {
	in := Spec{
		Modules:  []Module{{Name: "tun", Path: "/lib/modules/0-tun.ko"}},
		Binaries: []Binary{{Name: "x/y", Path: "/bin/0-y.test", Args: []string{"-test.v=test2json"}}},
		Env:      []string{"A=b"},
	}
	b, err := json.Marshal(in)
	assert.NilError(t, err)
	var out Spec
	assert.NilError(t, json.Unmarshal(b, &out))
	assert.Check(t, is.DeepEqual(in, out))
}
