package traffic

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// Reader reads frames from a tun/tap queue file, checks each is ours and
// follows each stream's sequence numbers.
type Reader struct {
	f     *os.File
	buf   []byte
	total atomic.Uint64
	// Streams follows the sequence numbers of each stream, in read order.
	Streams map[uint32]*Stream
	// last is Streams[lastID]: a sender's frames come in runs (a
	// sendmmsg(2) batch each), so most frames skip the map.
	last   *Stream
	lastID uint32
}

// Stream is what a Reader saw of one sender's frames. A Sender numbers its
// frames 0, 1, 2, ... and a queue must deliver them in that order, so each
// frame read must carry a number above the last one read; the numbers it
// jumps over are frames that did not arrive.
type Stream struct {
	// Frames counts the frames read, in order or not.
	Frames uint64
	// First is the number of the first frame read, Last the highest.
	First, Last uint64
	// InOrder frames carried a number above Last (the first frame
	// included); Skipped counts the numbers they jumped over.
	InOrder, Skipped uint64
	// Repeated frames carried Last again: a duplicate. Late frames carried
	// a number below Last: reordered, or a duplicate of an older frame
	// (the last number alone cannot tell which).
	Repeated, Late uint64
	// Disorder describes the first repeated or late frame.
	Disorder string
}

func (s *Stream) String() string {
	return fmt.Sprintf("first %d last %d: %d in order, %d skipped, %d repeated, %d late",
		s.First, s.Last, s.InOrder, s.Skipped, s.Repeated, s.Late)
}

// NewReader reads from f. Read needs a file that honours read
// deadlines (tuntap.Open's); ReadToEnd needs a blocking one
// (tuntap.OpenBlocking's). With a nil f the Reader only follows the frames
// given to Record (its reads fail with os.ErrInvalid).
func NewReader(f *os.File) *Reader {
	return &Reader{f: f, buf: make([]byte, 65536), Streams: map[uint32]*Stream{}}
}

// Read reads up to n frames, waiting at most wait for each one. It returns
// how many it read; a frame that is not ours is an error (something other
// than the test is sending).
func (r *Reader) Read(n int, wait time.Duration) (int, error) {
	defer profile.Running(profile.Traffic).End()
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
		if err := r.Record(r.buf[:m]); err != nil {
			return i, err
		}
	}
	return n, nil
}

// Total is how many frames r has read; safe to call while ReadToEnd runs.
func (r *Reader) Total() uint64 { return r.total.Load() }

// Seen counts the frames read per stream.
func (r *Reader) Seen() map[uint32]uint64 {
	seen := make(map[uint32]uint64, len(r.Streams))
	for id, s := range r.Streams {
		seen[id] = s.Frames
	}
	return seen
}

// Record checks that frame is ours and follows its stream, as Read does
// for each frame it reads. It is for a caller that reads the queue itself,
// where one read carries more than a frame (tun's packet information, a
// virtio-net header, a TCP segment of several frames). A frame that is not
// ours is ErrNotOurs and is not counted.
func (r *Reader) Record(frame []byte) error {
	stream, seq, err := Parse(frame)
	if err != nil {
		return err
	}
	r.follow(stream, seq)
	return nil
}

// follow counts frame seq of stream.
func (r *Reader) follow(stream uint32, seq uint64) {
	r.total.Add(1)
	s := r.last
	if s == nil || stream != r.lastID {
		if s = r.Streams[stream]; s == nil {
			s = &Stream{First: seq, Last: seq}
			r.Streams[stream] = s
		}
		r.last, r.lastID = s, stream
	}
	s.Frames++
	switch {
	case s.Frames == 1:
		s.InOrder = 1
	case seq > s.Last:
		s.Skipped += seq - s.Last - 1
		s.Last = seq
		s.InOrder++
	case seq == s.Last:
		s.Repeated++
		if s.Disorder == "" {
			s.Disorder = fmt.Sprintf("frame %d again right after itself (frame %d of the stream read)", seq, s.Frames)
		}
	default:
		s.Late++
		if s.Disorder == "" {
			s.Disorder = fmt.Sprintf("frame %d after frame %d (frame %d of the stream read)", seq, s.Last, s.Frames)
		}
	}
}

// InOrder returns an error naming every stream that had a repeated or a
// late frame, nil when each stream arrived in order.
func (r *Reader) InOrder() error {
	var bad []string
	for _, id := range slices.Sorted(maps.Keys(r.Streams)) {
		if s := r.Streams[id]; s.Repeated+s.Late > 0 {
			bad = append(bad, fmt.Sprintf("stream %d: %v; first: %s", id, s, s.Disorder))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("frames out of order: %s", strings.Join(bad, "; "))
}

// Missing returns how many frames of [from, to), the numbers a sender used
// for stream, r did not read in order. A frame read with a number outside
// that range is an error: the stream is not the sender's.
func (r *Reader) Missing(stream uint32, from, to uint64) (uint64, error) {
	s := r.Streams[stream]
	if s == nil {
		return to - from, nil
	}
	if s.First < from || s.Last >= to {
		return 0, fmt.Errorf("stream %d: read frames %d..%d, outside the %d..%d sent", stream, s.First, s.Last, from, to-1)
	}
	return to - from - s.InOrder, nil
}
