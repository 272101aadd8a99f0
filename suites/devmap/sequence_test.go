package devmap

import (
	"slices"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// Entries of the recorded sequences: keys 0, 1, 2 to ifindexes 10, 20, 30.
var (
	oneDest  = map[uint32]entry{0: {10, progA}}
	twoDests = map[uint32]entry{0: {10, progA}, 1: {20, progB}}
	three    = map[uint32]entry{0: {10, progA}, 1: {20, progB}, 2: {30, progA}}
)

// modelCase is a sequence the kernel logged (or could log) and what
// classify must make of it.
type modelCase struct {
	name    string
	tr      load
	entries map[uint32]entry
	seq     string
	polls   []int // explained at flush time in these polls
	enqueue bool  // explained at enqueue time only
	shows   bool
}

// TestModel holds the models to sequences from real runs and to hand-made
// wrong ones: any partition into polls passes at flush time, exactly the
// enqueue-time sequence is told apart, every other order fails.
func TestModel(t *testing.T) {
	observe.Of(t, feature.Seed004)
	for _, tc := range slices.Concat(flushTimeCases(), recordedCases(), enqueueTimeCases()) {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseEvents(tc.seq)
			assert.NilError(t, err)
			o := classify(got, tc.tr, tc.entries)
			assert.Check(t, is.DeepEqual(o.polls, tc.polls))
			assert.Check(t, is.Equal(o.enqueue, tc.enqueue))
			assert.Check(t, is.Equal(o.shows, tc.shows))
			assert.Check(t, o.err == nil, "%v", o.err)
			if tc.polls != nil {
				assert.Check(t, is.Equal(format(simulate(tc.tr, tc.entries, atFlush, tc.polls)), format(got)))
			}
		})
	}
	for _, tc := range wrongCases() {
		t.Run("Wrong/"+tc.name, func(t *testing.T) {
			got, err := parseEvents(tc.seq)
			assert.NilError(t, err)
			o := classify(got, tc.tr, tc.entries)
			assert.Check(t, o.err != nil, "explained: polls %v, enqueue %v", o.polls, o.enqueue)
			t.Log(o.err)
		})
	}
}

func flushTimeCases() []modelCase {
	one64 := load{frames: 64, keys: []uint32{0}}
	return []modelCase{
		// Live frames, repeat 64, batch 64 (kernels.md, 6.18).
		{"OnePoll", one64, oneDest,
			"M0-16>0 D0-15@10/A F16@10 M17-32>0 D16-31@10/A F16@10 " +
				"M33-48>0 D32-47@10/A F16@10 M49-63>0 D48-63@10/A F16@10",
			[]int{64}, false, true},
		// The PREEMPT_RT report's shape, M×1 D×3 M×7 D×21: a broadcast
		// burst of 8 in polls of 1 and 7.
		{"TwoPolls/Broadcast", load{frames: 8, keys: []uint32{0}, broadcast: true}, three,
			"M0>0 D0@30/A F1@30 D0@20/B F1@20 D0@10/A F1@10 " +
				"M1-7>0 D1-7@30/A F7@30 D1-7@20/B F7@20 D1-7@10/A F7@10",
			[]int{1, 7}, false, true},
		// ABAB in polls of 3, 3, 2: each poll flushes the queue it
		// reached last first.
		{"ThreePolls/ABAB", load{frames: 8, keys: []uint32{0, 1}}, twoDests,
			"M0>0 M1>1 M2>0 D1@20/B F1@20 D0@10/A D2@10/A F2@10 " +
				"M3>1 M4>0 M5>1 D4@10/A F1@10 D3@20/B D5@20/B F2@20 " +
				"M6>0 M7>1 D7@20/B F1@20 D6@10/A F1@10",
			[]int{3, 3, 2}, false, true},
		// A poll that ends two frames after a full queue's flush.
		{"FullThenEnd", load{frames: 20, keys: []uint32{0}}, oneDest,
			"M0-16>0 D0-15@10/A F16@10 M17>0 D16-17@10/A F2@10 M18-19>0 D18-19@10/A F2@10", []int{18, 2}, false, true},
		// Polls of one frame: flush and enqueue look alike.
		{"OneFramePolls", load{frames: 2, keys: []uint32{0}}, oneDest,
			"M0>0 D0@10/A F1@10 M1>0 D1@10/A F1@10", []int{1, 1}, false, false},
	}
}

// recordedCases are sequences debian:7.3 logged with in0's NAPI threaded,
// and debian:7.3-rt with its NAPI in softirq (ifindexes: in0 3, a0 5, b0 7):
// bursts split over polls of the kernel's choosing.
func recordedCases() []modelCase {
	ab := map[uint32]entry{0: {5, progA}, 1: {7, progB}}
	abIn := map[uint32]entry{0: {5, progA}, 1: {7, progB}, 2: {3, progA}}
	return []modelCase{
		{"Recorded/Broadcast/ExcludeIngress", load{frames: 8, keys: []uint32{0}, broadcast: true, exclude: 3}, abIn,
			"M0>0 D0@7/B F1@7 D0@5/A F1@5 M1-7>0 D1-7@7/B F7@7 D1-7@5/A F7@5", []int{1, 7}, false, true},
		{"Recorded/ABAB/Batch4", load{frames: 8, keys: []uint32{0, 1}}, ab,
			"M0>0 D0@5/A F1@5 M1>1 M2>0 M3>1 D2@5/A F1@5 D1@7/B D3@7/B F2@7 " +
				"M4>0 M5>1 M6>0 M7>1 D5@7/B D7@7/B F2@7 D4@5/A D6@5/A F2@5",
			[]int{1, 3, 4}, false, true},
		{"Recorded/ABAB/Batch40", load{frames: 40, keys: []uint32{0, 1}}, ab,
			"M0>0 D0@5/A F1@5 M1>1 D1@7/B F1@7 M2>0 D2@5/A F1@5 " +
				"M3>1 M4>0 M5>1 M6>0 M7>1 M8>0 M9>1 M10>0 M11>1 M12>0 M13>1 M14>0 M15>1 M16>0 M17>1 M18>0 M19>1 " +
				"M20>0 M21>1 M22>0 M23>1 M24>0 M25>1 M26>0 M27>1 M28>0 M29>1 M30>0 M31>1 M32>0 M33>1 M34>0 M35>1 " +
				"D3@7/B D5@7/B D7@7/B D9@7/B D11@7/B D13@7/B D15@7/B D17@7/B " +
				"D19@7/B D21@7/B D23@7/B D25@7/B D27@7/B D29@7/B D31@7/B D33@7/B F16@7 M36>0 " +
				"D4@5/A D6@5/A D8@5/A D10@5/A D12@5/A D14@5/A D16@5/A D18@5/A " +
				"D20@5/A D22@5/A D24@5/A D26@5/A D28@5/A D30@5/A D32@5/A D34@5/A F16@5 M37>1 M38>0 M39>1 " +
				"D36@5/A D38@5/A F2@5 D35@7/B D37@7/B D39@7/B F3@7",
			[]int{1, 1, 1, 37}, false, true},
		{"Recorded/RT/ABAB/Batch40", load{frames: 40, keys: []uint32{0, 1}}, ab,
			"M0>0 D0@5/A F1@5 M1>1 D1@7/B F1@7 " +
				"M2>0 M3>1 M4>0 M5>1 D3@7/B D5@7/B F2@7 D2@5/A D4@5/A F2@5 " +
				"M6>0 M7>1 M8>0 D7@7/B F1@7 D6@5/A D8@5/A F2@5 " +
				"M9>1 M10>0 M11>1 M12>0 M13>1 M14>0 M15>1 D10@5/A D12@5/A D14@5/A F3@5 D9@7/B D11@7/B D13@7/B D15@7/B F4@7 " +
				"M16>0 M17>1 M18>0 M19>1 M20>0 D17@7/B D19@7/B F2@7 D16@5/A D18@5/A D20@5/A F3@5 " +
				"M21>1 M22>0 M23>1 M24>0 M25>1 M26>0 M27>1 D22@5/A D24@5/A D26@5/A F3@5 D21@7/B D23@7/B D25@7/B D27@7/B F4@7 " +
				"M28>0 M29>1 M30>0 M31>1 M32>0 M33>1 M34>0 D29@7/B D31@7/B D33@7/B F3@7 D28@5/A D30@5/A D32@5/A D34@5/A F4@5 " +
				"M35>1 M36>0 M37>1 M38>0 M39>1 D36@5/A D38@5/A F2@5 D35@7/B D37@7/B D39@7/B F3@7",
			[]int{1, 1, 4, 3, 7, 5, 7, 7, 5}, false, true},
	}
}

func enqueueTimeCases() []modelCase {
	return []modelCase{
		// Recorded on debian:5.10, veth (a0 5, b0 7): the full queues flush
		// at frames 32 and 33, A and B go back to the flush list's head.
		{"Recorded/5.10/ABAB/Batch40", load{frames: 40, keys: []uint32{0, 1}}, map[uint32]entry{0: {5, progA}, 1: {7, progB}},
			"M0>0 D0@5/A M1>1 D1@7/B M2>0 D2@5/A M3>1 D3@7/B M4>0 D4@5/A M5>1 D5@7/B M6>0 D6@5/A M7>1 D7@7/B " +
				"M8>0 D8@5/A M9>1 D9@7/B M10>0 D10@5/A M11>1 D11@7/B M12>0 D12@5/A M13>1 D13@7/B " +
				"M14>0 D14@5/A M15>1 D15@7/B M16>0 D16@5/A M17>1 D17@7/B M18>0 D18@5/A M19>1 D19@7/B " +
				"M20>0 D20@5/A M21>1 D21@7/B M22>0 D22@5/A M23>1 D23@7/B M24>0 D24@5/A M25>1 D25@7/B " +
				"M26>0 D26@5/A M27>1 D27@7/B M28>0 D28@5/A M29>1 D29@7/B M30>0 D30@5/A M31>1 D31@7/B " +
				"M32>0 D32@5/A F16@5 M33>1 D33@7/B F16@7 " +
				"M34>0 D34@5/A M35>1 D35@7/B M36>0 D36@5/A M37>1 D37@7/B M38>0 D38@5/A M39>1 D39@7/B F4@7 F4@5",
			nil, true, false},
		// 5.10, veth, bursts of 16: D right after M, one flush per poll.
		{"Enqueue/Polls16", load{frames: 4, keys: []uint32{0}}, oneDest,
			"M0>0 D0@10/A M1>0 D1@10/A F2@10 M2>0 D2@10/A M3>0 D3@10/A F2@10", nil, true, false},
		// 5.10's XDP_DROP at enqueue: nothing queued, no flush at all.
		{"Enqueue/Drop", load{frames: 2, keys: []uint32{0}}, map[uint32]entry{0: {10, progDrop}},
			"M0>0 D0@10/drop M1>0 D1@10/drop", nil, true, false},
	}
}

func wrongCases() []modelCase {
	two := load{frames: 2, keys: []uint32{0}}
	abab := load{frames: 4, keys: []uint32{0, 1}}
	return []modelCase{
		{name: "DBeforeItsM", tr: two, entries: oneDest, seq: "M0>0 D1@10/A M1>0 D0@10/A F2@10"},
		{name: "DTwice", tr: two, entries: oneDest, seq: "M0>0 M1>0 D0-1@10/A D1@10/A F2@10"},
		{name: "WrongProgram", tr: two, entries: oneDest, seq: "M0>0 M1>0 D0-1@10/B F2@10"},
		{name: "WrongDevice", tr: two, entries: oneDest, seq: "M0>0 M1>0 D0-1@20/A F2@10"},
		{name: "NoFlush", tr: two, entries: oneDest, seq: "M0>0 M1>0 D0-1@10/A"},
		{name: "FlushSize", tr: two, entries: oneDest, seq: "M0>0 M1>0 D0-1@10/A F1@10 F1@10"},
		{name: "DInLaterPoll", tr: two, entries: oneDest, seq: "M0>0 M1>0 D0@10/A F1@10 D1@10/A F1@10"},
		{name: "DevicesInterleaved", tr: abab, entries: twoDests,
			seq: "M0>0 M1>1 M2>0 M3>1 D1@20/B D0@10/A D3@20/B D2@10/A F2@20 F2@10"},
		{name: "FlushListNotReversed", tr: abab, entries: twoDests,
			seq: "M0>0 M1>1 M2>0 M3>1 D0@10/A D2@10/A F2@10 D1@20/B D3@20/B F2@20"},
		{name: "BulkOf17", tr: load{frames: 17, keys: []uint32{0}}, entries: oneDest, seq: "M0-16>0 D0-16@10/A F17@10"},
		{name: "EnqueueFlushMisplaced", tr: two, entries: oneDest, seq: "M0>0 D0@10/A F2@10 M1>0 D1@10/A"},
		{name: "Extra", tr: two, entries: oneDest, seq: "M0>0 M1>0 D0-1@10/A F2@10 M2>0"},
	}
}

// TestModelFlushList pins what the seed changed besides the timing: a
// queue flushed when full keeps its place on the flush list; before the
// seed it went back to the list's head with its next frame.
func TestModelFlushList(t *testing.T) {
	observe.Of(t, feature.Seed004)
	keys := []uint32{0, 1}
	for range 16 {
		keys = append(keys, 0)
	}
	tr := load{frames: len(keys), keys: keys}
	end := func(evs []event) []event { // the flushes at the poll's end
		f := slices.DeleteFunc(evs, func(e event) bool { return e.kind != 'F' })
		return f[len(f)-2:]
	}
	flushed := end(simulate(tr, twoDests, atFlush, []int{len(keys)}))
	enqueued := end(simulate(tr, twoDests, atEnqueue, []int{len(keys)}))
	assert.Check(t, is.Equal(format(flushed), "F1@20 F1@10"))
	assert.Check(t, is.Equal(format(enqueued), "F1@10 F1@20"))
}
