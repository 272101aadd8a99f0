package report

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

func TestBenchmarks(t *testing.T) {
	snaps := []results.Snapshot{
		{Kernel: "a", Benchmarks: []string{
			"BenchmarkTap/threads=10/mode=x-4 \t 1\t 5 ns/op\t 100 rx-pps\t 7 tun_lost/s",
			"BenchmarkTap/threads=2/mode=x-4 \t 1\t 5 ns/op\t 50 rx-pps\t 1 lost/s",
			"BenchmarkTap/threads=2/mode=y-4 \t 1\t 5 ns/op\t 60 rx-pps",
			"BenchmarkSchedule/senders=1-4 \t 1\t 5 ns/op\t 0.5 raises/pkt",
		}},
		{Kernel: "b"},
		// Another GOMAXPROCS is the same series; a second result is
		// another value.
		{Kernel: "c", Benchmarks: []string{
			"BenchmarkTap/threads=2/mode=x-2 \t 1\t 5 ns/op\t 55 rx-pps",
			"BenchmarkTap/threads=2/mode=x-2 \t 1\t 5 ns/op\t 57 rx-pps",
			"BenchmarkTap-2 \t one\t 5 ns/op",
		}},
	}
	charts, problems := benchmarks(snaps)
	assert.Check(t, is.DeepEqual(charts, []*benchChart{
		{Bench: "Tap", Group: "threads=2", Unit: "rx-pps", Title: "Tap threads=2: received packets/s", Series: []*series{
			{Name: "mode=x", Values: [][]float64{{50}, nil, {55, 57}}},
			{Name: "mode=y", Values: [][]float64{{60}, nil, nil}},
		}},
		{Bench: "Tap", Group: "threads=2", Unit: "lost/s", Title: "Tap threads=2: lost packets/s", Series: []*series{
			{Name: "mode=x", Values: [][]float64{{1}, nil, nil}},
		}},
		{Bench: "Tap", Group: "threads=10", Unit: "rx-pps", Title: "Tap threads=10: received packets/s", Series: []*series{
			{Name: "mode=x", Values: [][]float64{{100}, nil, nil}},
		}},
		{Bench: "Schedule", Group: "senders=1", Unit: "raises/pkt",
			Title: "Schedule senders=1: NET_TX softirq raises per delivered packet", Series: []*series{
				{Name: "Schedule", Values: [][]float64{{0.5}, nil, nil}},
			}},
	}))
	assert.Check(t, is.Len(problems, 1))
	assert.Check(t, is.Contains(problems[0], "c:3: "))
	assert.Check(t, is.DeepEqual(charts[0].kernels(), []int{0, 2}))
}

func TestLayout(t *testing.T) {
	ks := []kernel{{Short: "a"}, {Short: "b"}}
	c := layout(0, &benchChart{Title: "T", Unit: "lost/s", Series: []*series{
		{Name: "x", Values: [][]float64{{0}, {300, 500}}},
	}}, ks)
	assert.Check(t, is.Equal(c.Ticks[5].Label, "500"), "the axis ends at the greatest result")
	assert.Assert(t, is.Len(c.Bars, 2))
	zero, two := c.Bars[0], c.Bars[1]
	assert.Check(t, is.Equal(zero.H, minBarH), "a 0 shows")
	assert.Check(t, !zero.Whisker)
	assert.Check(t, is.Equal(two.H, plotH*400/500), "the mean")
	assert.Check(t, two.Whisker && two.WY0 == c.Top && two.WY1 == c.Base-plotH*300/500,
		"from the greatest to the least: %+v", two)
	assert.Check(t, is.DeepEqual(c.Rows, []valueRow{{Series: "x", Cells: []string{"0", "400 (n=2, 300–500)"}}}))
}

func TestFormat(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 0.034: "0.034", 12.5: "12.5", 999.9: "1k", 812345: "812k", 1.2e6: "1.2M", 3e9: "3G",
	} {
		assert.Check(t, is.Equal(si(v), want), "%v", v)
	}
	for v, want := range map[float64]float64{0: 1, 0.41: 0.5, 1: 1, 1.2: 2, 2.4: 2.5, 3: 5, 612000: 1e6} {
		assert.Check(t, is.Equal(niceCeil(v), want), "%v", v)
	}
}
