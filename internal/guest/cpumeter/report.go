package cpumeter

import "testing"

// Report reports u per frame moved as b's metrics: cpu-ns/frame,
// nettx/frame and, where the vCPU has a PMU, instructions/frame.
func (u Usage) Report(b *testing.B, frames uint64) {
	if frames == 0 {
		return
	}
	per := func(v float64) float64 { return v / float64(frames) }
	b.ReportMetric(per(float64(u.Busy.Nanoseconds())), "cpu-ns/frame")
	b.ReportMetric(per(float64(u.NetTx)), "nettx/frame")
	if u.HasInstructions {
		b.ReportMetric(per(float64(u.Instructions)), "instructions/frame")
	}
}
