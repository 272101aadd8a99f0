package report

import (
	"math"
	"strconv"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// si formats v with three significant digits and a k, M or G suffix:
// 812345 → "812k", 0.034 → "0.034".
func si(v float64) string {
	v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64) // 999.9 is "1k"
	for _, p := range []struct {
		div    float64
		suffix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= p.div {
			return strconv.FormatFloat(v/p.div, 'g', 3, 64) + p.suffix
		}
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// dur formats a duration to about three significant digits: "1.23s",
// "45ms", "2m3s".
func dur(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}

// ranOn names what a run ran on: its accelerator, or "no VM" for the host.
func ranOn(accel string) string {
	if results.NoVM(accel) {
		return "no VM"
	}
	return accel
}

// boot is a run's boot-to-first-test, or "—" where nothing booted.
func boot(accel string, d time.Duration) string {
	if results.NoVM(accel) {
		return "—"
	}
	return dur(d)
}

// pctText formats a change in percent with its sign: "+1.2 %".
func pctText(v float64) string {
	if v >= 0 {
		return "+" + strconv.FormatFloat(v, 'f', 1, 64) + " %"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " %"
}
