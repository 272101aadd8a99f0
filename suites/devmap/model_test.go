package devmap

import (
	"fmt"
	"slices"
	"strings"
)

// bulkSize is DEV_MAP_BULK_SIZE (kernel/bpf/devmap.c): a per-CPU, per-device
// bulk queue holds at most 16 frames.
const bulkSize = 16

// event is one thing the programs logged, in the order it happened: a run
// of the main program (M) or of a devmap program (D), or a bulk queue flush
// (F, the xdp_devmap_xmit tracepoint).
type event struct {
	kind  byte   // 'M', 'D' or 'F'
	frame uint32 // M, D: the number the main program gave the frame
	dev   uint32 // M: the devmap key; D: egress ifindex; F: the device flushed
	prog  uint32 // D: the devmap program's tag
	size  uint32 // F: frames flushed, sent and dropped
}

func (e event) String() string {
	switch e.kind {
	case 'M':
		return fmt.Sprintf("M%d→%d", e.frame, e.dev)
	case 'D':
		return fmt.Sprintf("D%d@%d/%s", e.frame, e.dev, progName(e.prog))
	}
	return fmt.Sprintf("F%d@%d", e.size, e.dev)
}

// Tags the devmap programs stamp (bpf/devmap.c).
const (
	progA    = 1
	progB    = 2
	progDrop = 3
	progMark = 4
	progVLAN = 5
	progTrim = 6
	progPad  = 7
)

func progName(tag uint32) string {
	names := map[uint32]string{
		progA: "A", progB: "B", progDrop: "drop", progMark: "mark",
		progVLAN: "vlan", progTrim: "trim", progPad: "pad",
	}
	if n, ok := names[tag]; ok {
		return n
	}
	return fmt.Sprintf("prog%d", tag)
}

// entry is one devmap entry: the device it points at and its program's tag
// (0: none).
type entry struct {
	dev, prog uint32
}

// load is what a test pushes through the main program: frame n goes to
// key keys[n % len(keys)], or to every entry in key order when broadcast
// (leaving out the device exclude, when not 0: BPF_F_EXCLUDE_INGRESS).
type load struct {
	frames    int
	keys      []uint32
	broadcast bool
	exclude   uint32
}

func (tr load) key(n int) uint32 {
	if len(tr.keys) == 0 {
		return 0
	}
	return tr.keys[n%len(tr.keys)]
}

// targets are the entries frame n is enqueued to, in enqueue order:
// dev_map_enqueue_multi walks the array, and the hash buckets (one key
// each below max_entries), in key order.
func (tr load) targets(n int, entries map[uint32]entry) []entry {
	if !tr.broadcast {
		if e, ok := entries[tr.key(n)]; ok {
			return []entry{e}
		}
		return nil
	}
	var out []entry
	for k := uint32(0); k < 64; k++ {
		if e, ok := entries[k]; ok && (tr.exclude == 0 || e.dev != tr.exclude) {
			out = append(out, e)
		}
	}
	return out
}

// when is when the devmap program runs.
type when int

const (
	// atFlush is seed 004: bq_xmit_all runs the queue's program over its
	// frames, in queue order, then transmits the survivors.
	atFlush when = iota
	// atEnqueue is the native path before the seed (5.10):
	// dev_map_enqueue runs the entry's program, then queues what passed.
	atEnqueue
	// atOnce is the generic (SKB-mode) path on every kernel: no bulk
	// queue, dev_map_generic_redirect runs the entry's program at once.
	atOnce
)

func (w when) String() string {
	return [...]string{"at flush", "at enqueue", "at once (generic XDP)"}[w]
}

// passes reports whether a devmap program passes its frames.
func passes(prog uint32) bool { return prog != progDrop }

// queue is one device's bulk queue (dev->xdp_bulkq).
type queue struct {
	dev    uint32
	frames []uint32
	prog   uint32 // latched by the first frame of the poll
	listed bool   // on the flush list
}

// kernel steps kernel/bpf/devmap.c over one frame or one poll's end:
//
//   - bq_enqueue queues a frame on its destination *device*'s queue; a
//     queue that holds bulkSize frames is flushed first, so the next
//     frame's M run comes before the D runs of the full queue;
//   - a queue's first frame of a poll latches dev_rx and the entry's
//     program and puts the queue at the head of the flush list (list_add);
//   - xdp_do_flush at the end of the poll (__dev_flush) walks the list from
//     its head: queues flush in reverse order of their first frame;
//   - every flush of a non-empty queue fires xdp_devmap_xmit once;
//   - before the seed, bq_xmit_all also took the queue off the flush list,
//     so a queue flushed when full went back to the list's head with its
//     next frame (the seed moved that clean-up to __dev_flush).
//
// A poll is what one NAPI poll (or one batch of the live-frames runner)
// takes: how many frames that is belongs to the machine, not to the seed.
type kernel struct {
	tr      load
	entries map[uint32]entry
	when    when
	queues  map[uint32]*queue
	list    []*queue // the flush list, head first
}

func newKernel(tr load, entries map[uint32]entry, w when) *kernel {
	return &kernel{tr: tr, entries: entries, when: w, queues: map[uint32]*queue{}}
}

// main is frame n through the main program and its redirect.
func (k *kernel) main(n int) []event {
	out := []event{{kind: 'M', frame: uint32(n), dev: k.tr.key(n)}}
	for _, e := range k.tr.targets(n, k.entries) {
		if k.when != atFlush && e.prog != 0 {
			out = append(out, event{kind: 'D', frame: uint32(n), dev: e.dev, prog: e.prog})
			if !passes(e.prog) {
				continue
			}
		}
		if k.when == atOnce {
			continue
		}
		q := k.queues[e.dev]
		if q == nil {
			q = &queue{dev: e.dev}
			k.queues[e.dev] = q
		}
		if len(q.frames) == bulkSize {
			out = append(out, k.flush(q)...)
		}
		if !q.listed {
			q.listed, q.prog = true, e.prog
			k.list = append([]*queue{q}, k.list...)
		}
		q.frames = append(q.frames, uint32(n))
	}
	return out
}

// flush is bq_xmit_all.
func (k *kernel) flush(q *queue) []event {
	var out []event
	if k.when == atFlush && q.prog != 0 {
		for _, f := range q.frames {
			out = append(out, event{kind: 'D', frame: f, dev: q.dev, prog: q.prog})
		}
	}
	out = append(out, event{kind: 'F', dev: q.dev, size: uint32(len(q.frames))})
	q.frames = q.frames[:0]
	if k.when != atFlush && q.listed {
		q.listed = false
		k.list = slices.DeleteFunc(k.list, func(l *queue) bool { return l == q })
	}
	return out
}

// endPoll is __dev_flush.
func (k *kernel) endPoll() []event {
	var out []event
	list := k.list
	k.list = nil
	for _, q := range list {
		out = append(out, k.flush(q)...)
		q.listed, q.prog = false, 0
	}
	return out
}

// simulate is the sequence the kernel produces when its polls take polls[i]
// frames each (in order; they must add up to tr.frames).
func simulate(tr load, entries map[uint32]entry, w when, polls []int) []event {
	k := newKernel(tr, entries, w)
	var out []event
	n := 0
	for _, p := range polls {
		for range p {
			out = append(out, k.main(n)...)
			n++
		}
		out = append(out, k.endPoll()...)
	}
	return out
}

// explain finds the polls under which the kernel, running devmap programs
// w, produces exactly got, and returns their sizes. Where a poll ends is
// read off got itself: after frame n's M run and whatever its enqueue
// flushed, anything but the next M run (or the end) must be the poll's
// end flush. So any partition of the frames into polls explains a
// sequence, and every other rule is exact: each frame's D once, after its
// own M, in the flush of its poll (or of its full queue), grouped by device
// in flush-list order, with the latched program, each flush's size.
func explain(got []event, tr load, entries map[uint32]entry, w when) ([]int, error) {
	k := newKernel(tr, entries, w)
	var polls []int
	pos, start := 0, 0
	step := func(want []event, what string) error {
		for i, e := range want {
			if pos+i >= len(got) {
				return fmt.Errorf("%s: the log ends at event %d, want %v next (%s)", w, len(got), e, what)
			}
			if got[pos+i] != e {
				return fmt.Errorf("%s: event %d is %v, want %v (%s; polls so far %v)", w, pos+i, got[pos+i], e, what, polls)
			}
		}
		pos += len(want)
		return nil
	}
	for n := range tr.frames {
		if err := step(k.main(n), fmt.Sprintf("frame %d's M run and enqueue", n)); err != nil {
			return polls, err
		}
		last := n == tr.frames-1
		if !last && pos < len(got) && got[pos].kind == 'M' {
			continue
		}
		end := k.endPoll()
		if len(end) == 0 && !last {
			continue // nothing queued: a poll's end leaves no trace
		}
		if err := step(end, fmt.Sprintf("the flush at the end of a poll after frame %d", n)); err != nil {
			return polls, err
		}
		polls = append(polls, n+1-start)
		start = n + 1
	}
	if pos < len(got) {
		return polls, fmt.Errorf("%s: event %d, %v, comes after the last frame's poll", w, pos, got[pos])
	}
	return polls, nil
}

// order is what a native sequence showed.
type order struct {
	// polls explain the sequence at flush time (nil when none does).
	polls []int
	// enqueue: no partition explains it at flush time, one does at
	// enqueue time: the devmap program ran before the frame was queued.
	enqueue bool
	// shows: the sequence tells flush from enqueue (only at flush time
	// explains it), so it shows seed 004.
	shows bool
	// err says why no explanation fits (neither at flush nor at enqueue).
	err error
}

// classify judges a native sequence against seed 004 and the kernel
// before it.
func classify(got []event, tr load, entries map[uint32]entry) order {
	polls, errFlush := explain(got, tr, entries, atFlush)
	_, errEnqueue := explain(got, tr, entries, atEnqueue)
	switch {
	case errFlush == nil:
		return order{polls: polls, shows: errEnqueue != nil}
	case errEnqueue == nil:
		return order{enqueue: true}
	}
	return order{err: fmt.Errorf("%v; %v", errFlush, errEnqueue)}
}

// batches are the polls of the live-frames runner: batch frames each
// (xdp_test_run_batch flushes after each), the rest last.
func batches(frames, batch int) []int {
	var out []int
	for n := frames; n > 0; n -= batch {
		out = append(out, min(n, batch))
	}
	return out
}

// runsOnly drops the flushes.
func runsOnly(evs []event) []event {
	return slices.DeleteFunc(slices.Clone(evs), func(e event) bool { return e.kind == 'F' })
}

// onlyD keeps the D runs.
func onlyD(evs []event) []event {
	return slices.DeleteFunc(slices.Clone(evs), func(e event) bool { return e.kind != 'D' })
}

// shape writes a sequence's runs as run lengths of their kinds, flushes
// left out: "M×17 D×16 …".
func shape(evs []event) string {
	runs := runsOnly(evs)
	var b strings.Builder
	for i := 0; i < len(runs); {
		j := i
		for j < len(runs) && runs[j].kind == runs[i].kind {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%c×%d", runs[i].kind, j-i)
		i = j
	}
	return b.String()
}
