package traffic

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// datagrams returns a Reader on one end of a datagram socket pair and a
// function writing frames of stream into the other end. The reading end
// has the flags (unix.SOCK_NONBLOCK or 0) of a tap's file from tuntap.Open
// (it honours deadlines) or from tuntap.OpenBlocking.
func datagrams(t *testing.T, flags int) (*Reader, func(stream uint32, seqs ...uint64)) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|flags|unix.SOCK_CLOEXEC, 0)
	assert.NilError(t, err)
	rd, wr := os.NewFile(uintptr(fds[0]), "read"), os.NewFile(uintptr(fds[1]), "write")
	t.Cleanup(func() { rd.Close(); wr.Close() })
	return NewReader(rd), func(stream uint32, seqs ...uint64) {
		for _, seq := range seqs {
			_, err := wr.Write(Frame(SourceMAC(stream), stream, seq))
			assert.NilError(t, err)
		}
	}
}

func TestReaderFollowsStreams(t *testing.T) {
	r, write := datagrams(t, unix.SOCK_NONBLOCK)
	write(1, 0, 1, 2, 5, 9)
	write(2, 7, 8)
	got, err := r.Read(8, 10*time.Millisecond)
	assert.NilError(t, err)
	assert.Equal(t, got, 7)
	assert.NilError(t, r.InOrder())
	assert.DeepEqual(t, *r.Streams[1], Stream{Frames: 5, First: 0, Last: 9, InOrder: 5, Skipped: 5})
	assert.DeepEqual(t, *r.Streams[2], Stream{Frames: 2, First: 7, Last: 8, InOrder: 2})
	assert.DeepEqual(t, r.Seen(), map[uint32]uint64{1: 5, 2: 2})

	missing, err := r.Missing(1, 0, 12)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(missing, uint64(7)), "3, 4, 6, 7, 8, 10, 11")
	missing, err = r.Missing(3, 4, 10)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(missing, uint64(6)), "a stream never read misses all")
	_, err = r.Missing(2, 0, 8)
	assert.ErrorContains(t, err, "outside the 0..7 sent")
}

func TestReaderFindsDisorder(t *testing.T) {
	r, write := datagrams(t, unix.SOCK_NONBLOCK)
	write(1, 0, 1, 1, 2)
	write(2, 0, 3, 2, 4)
	_, err := r.Read(9, 10*time.Millisecond)
	assert.NilError(t, err)
	assert.DeepEqual(t, *r.Streams[1], Stream{Frames: 4, First: 0, Last: 2, InOrder: 3, Repeated: 1,
		Disorder: "frame 1 again right after itself (frame 3 of the stream read)"})
	assert.DeepEqual(t, *r.Streams[2], Stream{Frames: 4, First: 0, Last: 4, InOrder: 3, Skipped: 2, Late: 1,
		Disorder: "frame 2 after frame 3 (frame 3 of the stream read)"})
	assert.ErrorContains(t, r.InOrder(),
		"stream 1: first 0 last 2: 3 in order, 0 skipped, 1 repeated, 0 late; first: frame 1 again")
	assert.ErrorContains(t, r.InOrder(),
		"stream 2: first 0 last 4: 3 in order, 2 skipped, 0 repeated, 1 late; first: frame 2 after frame 3")
}

func TestReadToEnd(t *testing.T) {
	r, write := datagrams(t, 0)
	done := make(chan error, 1)
	go func() { done <- r.ReadToEnd(9) }()
	// Its loop must let the world stop while the queue is empty.
	gc := make(chan struct{})
	go func() { runtime.GC(); close(gc) }()
	select {
	case <-gc:
	case <-time.After(5 * time.Second):
		t.Fatal("a garbage collection did not finish within 5s while ReadToEnd polled an empty queue")
	}
	write(1, 0, 1, 2)
	for end := time.Now().Add(5 * time.Second); r.Total() < 3; time.Sleep(time.Millisecond) {
		assert.Assert(t, time.Now().Before(end), "ReadToEnd read %d of 3 frames in 5s", r.Total())
	}
	write(9, 0)
	select {
	case err := <-done:
		assert.NilError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("ReadToEnd did not return within 5s of the end frame")
	}
	assert.DeepEqual(t, r.Seen(), map[uint32]uint64{1: 3}) // the end frame is not counted
	assert.DeepEqual(t, *r.Streams[1], Stream{Frames: 3, First: 0, Last: 2, InOrder: 3})
}

func TestReadToEndWantsBlocking(t *testing.T) {
	r, _ := datagrams(t, unix.SOCK_NONBLOCK)
	assert.ErrorContains(t, r.ReadToEnd(9), "ReadToEnd needs a blocking file")
}

func TestReadToEndRestoresBlocking(t *testing.T) {
	r, write := datagrams(t, 0)
	write(9, 0)
	assert.NilError(t, r.ReadToEnd(9))
	fl, err := unix.FcntlInt(r.f.Fd(), unix.F_GETFL, 0)
	assert.NilError(t, err)
	assert.Equal(t, fl&unix.O_NONBLOCK, 0, "the file is non-blocking after ReadToEnd")
}

func TestReadNow(t *testing.T) {
	r, write := datagrams(t, unix.SOCK_NONBLOCK)
	got, err := r.ReadNow()
	assert.NilError(t, err)
	assert.Equal(t, got, 0, "nothing waiting")
	write(4, 6)
	got, err = r.ReadNow()
	assert.NilError(t, err)
	assert.Equal(t, got, 1)
	assert.DeepEqual(t, *r.Streams[4], Stream{Frames: 1, First: 6, Last: 6, InOrder: 1})
}

func TestRecord(t *testing.T) {
	r := NewReader(nil)
	for _, seq := range []uint64{3, 4, 6, 6, 5} {
		assert.NilError(t, r.Record(Frame(SourceMAC(2), 2, seq)))
	}
	notOurs := Frame(SourceMAC(2), 2, 7)
	notOurs[14] ^= 1
	assert.ErrorIs(t, r.Record(notOurs), ErrNotOurs)
	assert.ErrorIs(t, r.Record(notOurs[:29]), ErrNotOurs)
	assert.Equal(t, r.Total(), uint64(5), "a frame that is not ours is not counted")
	assert.DeepEqual(t, *r.Streams[2], Stream{Frames: 5, First: 3, Last: 6, InOrder: 3, Skipped: 1, Repeated: 1, Late: 1,
		Disorder: "frame 6 again right after itself (frame 4 of the stream read)"})

	_, err := r.Read(1, time.Millisecond)
	assert.ErrorIs(t, err, os.ErrInvalid, "a Reader of no file reads nothing")
}
