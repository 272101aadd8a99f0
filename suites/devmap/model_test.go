package devmap

import (
	"fmt"
	"strings"
)

// BulkSize is DEV_MAP_BULK_SIZE (kernel/bpf/devmap.c): a per-CPU, per-device
// bulk queue holds at most 16 frames.
const BulkSize = 16

// Run is one program run as the test reads it back from the runs log, or as
// a model predicts it.
type Run struct {
	// Kind is 'M' (main program) or 'D' (devmap program).
	Kind byte
	// Frame is the number the main program gave the frame.
	Frame uint32
	// Dev is, for M, the devmap key it redirected to and, for D, the
	// egress ifindex (models use the entry's device instead).
	Dev uint32
	// Prog is the devmap program's tag (1 = A, 2 = B, 3 = drop, 4 =
	// mark); 0 for M.
	Prog uint32
}

func (r Run) String() string {
	if r.Kind == 'M' {
		return fmt.Sprintf("M%d→%d", r.Frame, r.Dev)
	}
	return fmt.Sprintf("D%d@%d/%s", r.Frame, r.Dev, progName(r.Prog))
}

func progName(tag uint32) string {
	switch tag {
	case progA:
		return "A"
	case progB:
		return "B"
	case progDrop:
		return "drop"
	case progMark:
		return "mark"
	}
	return fmt.Sprintf("prog%d", tag)
}

// Tags the devmap programs stamp (bpf/devmap.c).
const (
	progA    = 1
	progB    = 2
	progDrop = 3
	progMark = 4
)

// Entry is one devmap entry of a model: the device it points at and the tag
// of its program (0: none).
type Entry struct {
	Dev  uint32
	Prog uint32
}

// Traffic is what a test pushes through the main program: Frames frames in
// batches of Batch (one xdp_do_flush after each batch), frame n redirected to
// key Keys[n % len(Keys)], or to every entry in key order when Broadcast.
type Traffic struct {
	Frames, Batch int
	Keys          []uint32
	Broadcast     bool
	// Exclude is the ingress device, left out of a broadcast when not 0
	// (BPF_F_EXCLUDE_INGRESS).
	Exclude uint32
}

// targets returns the entries frame n is enqueued to, in enqueue order.
func (tr Traffic) targets(n int, entries map[uint32]Entry) []Entry {
	if !tr.Broadcast {
		e, ok := entries[tr.Keys[n%len(tr.Keys)]]
		if !ok {
			return nil
		}
		return []Entry{e}
	}
	// dev_map_enqueue_multi walks the array (and the hash buckets, one
	// key each for keys below max_entries) in key order.
	var out []Entry
	for k := uint32(0); k < 64; k++ {
		if e, ok := entries[k]; ok && (tr.Exclude == 0 || e.Dev != tr.Exclude) {
			out = append(out, e)
		}
	}
	return out
}

func (tr Traffic) key(n int) uint32 {
	if len(tr.Keys) == 0 {
		return 0
	}
	return tr.Keys[n%len(tr.Keys)]
}

// FlushTime is the sequence of runs seed 004 produces. It follows
// kernel/bpf/devmap.c since 5.14:
//
//   - bq_enqueue puts the frame on the bulk queue of the destination
//     *device* (dev->xdp_bulkq, per CPU), not of the devmap entry;
//   - a queue that already holds DEV_MAP_BULK_SIZE (16) frames is flushed
//     (bq_xmit_all) before the new frame is added, so the 17th frame's M
//     run comes before the D runs of the first 16;
//   - the first frame a queue gets in a NAPI cycle latches dev_rx and the
//     entry's xdp_prog and puts the queue at the *head* of the flush list
//     (list_add); both stay until __dev_flush, so a mid-cycle flush keeps
//     the queue's place and program;
//   - xdp_do_flush at the end of the batch walks the flush list from the
//     head: the queues flush in reverse order of their first frame;
//   - bq_xmit_all runs the queue's program over its frames in queue order
//     (dev_map_bpf_prog_run), then transmits the survivors.
//
// With one destination, repeat 64 and batch 64 this gives
// M×17 D×16 M×16 D×16 M×16 D×16 M×15 D×16, the pattern measured on 6.18.
func FlushTime(tr Traffic, entries map[uint32]Entry) []Run {
	type queue struct {
		frames []uint32
		prog   uint32
		listed bool
	}
	var out []Run
	flush := func(dev uint32, q *queue) {
		if q.prog != 0 {
			for _, f := range q.frames {
				out = append(out, Run{Kind: 'D', Frame: f, Dev: dev, Prog: q.prog})
			}
		}
		q.frames = q.frames[:0]
	}
	for start := 0; start < tr.Frames; start += tr.Batch {
		queues := map[uint32]*queue{}
		var list []uint32 // flush list, head first
		for n := start; n < min(start+tr.Batch, tr.Frames); n++ {
			out = append(out, Run{Kind: 'M', Frame: uint32(n), Dev: tr.key(n)})
			for _, e := range tr.targets(n, entries) {
				q := queues[e.Dev]
				if q == nil {
					q = &queue{}
					queues[e.Dev] = q
				}
				if len(q.frames) == BulkSize {
					flush(e.Dev, q)
				}
				if !q.listed {
					q.listed, q.prog = true, e.Prog
					list = append([]uint32{e.Dev}, list...)
				}
				q.frames = append(q.frames, uint32(n))
			}
		}
		for _, dev := range list {
			flush(dev, queues[dev])
		}
	}
	return out
}

// EnqueueTime is the sequence before seed 004 (5.10): dev_map_enqueue runs
// the entry's own program on the frame right after the main program
// returned, before the frame is queued, so runs alternate M D M D under any
// batching. It is also the generic (SKB-mode) path's sequence on every
// kernel: dev_map_generic_redirect runs the entry's program on each frame
// at once (broadcast copies in key order).
func EnqueueTime(tr Traffic, entries map[uint32]Entry) []Run {
	var out []Run
	for n := 0; n < tr.Frames; n++ {
		out = append(out, Run{Kind: 'M', Frame: uint32(n), Dev: tr.key(n)})
		for _, e := range tr.targets(n, entries) {
			if e.Prog != 0 {
				out = append(out, Run{Kind: 'D', Frame: uint32(n), Dev: e.Dev, Prog: e.Prog})
			}
		}
	}
	return out
}

// Shape writes a sequence as run lengths of its kinds: "M×17 D×16 …".
func Shape(runs []Run) string {
	var b strings.Builder
	for i := 0; i < len(runs); {
		j := i
		for j < len(runs) && runs[j].Kind == runs[i].Kind {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%c×%d", runs[i].Kind, j-i)
		i = j
	}
	return b.String()
}

// Equal reports whether two sequences are the same run for run.
func Equal(a, b []Run) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FirstDifference describes where two sequences part, for failure messages.
func FirstDifference(got, want []Run) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("run %d: got %v, want %v", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("got %d runs, want %d", len(got), len(want))
}
