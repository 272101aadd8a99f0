package cost

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// Judgment is what a row's measurement says of its claim.
type Judgment string

const (
	// Within: the interval does not reach below the claim by more than
	// the noise floor.
	Within Judgment = "within claim"
	// Regressed: the whole interval is worse than the claim by more than
	// the noise floor.
	Regressed Judgment = "REGRESSED"
	// Noisy: the interval reaches across that line: it is wider than
	// what it judges.
	Noisy Judgment = "noisy"
	// Unmeasured: no measure had two rounds of both sides (a side failed
	// or was skipped; Why says which and why).
	Unmeasured Judgment = "error"
)

// Measure is one measure of a row's work: B's change against A, and A2's
// against A, the noise floor, made the same way.
type Measure struct {
	Unit   string
	Better Better
	// Claim is the row's claim in this measure's terms, in percent.
	Claim  float64
	Change Change
	// AA is the change of the stock side's repeat against it.
	AA Change
	// Err says why the measure has no change.
	Err string `json:",omitempty"`
}

// Floor is the noise floor: the largest change, either way, the A/A
// interval reaches.
func (m Measure) Floor() float64 { return math.Max(math.Abs(m.AA.Lo), math.Abs(m.AA.Hi)) }

// judge applies the rule: the claim moved against the measure by the
// floor is the line; an interval wholly beyond it regressed, one wholly
// short of it is within the claim, one across it is noisy.
func (m Measure) judge() Judgment {
	f := m.Floor()
	if m.Better == Higher {
		line := m.Claim - f
		switch {
		case m.Change.Hi < line:
			return Regressed
		case m.Change.Lo >= line:
			return Within
		}
		return Noisy
	}
	line := m.Claim + f
	switch {
	case m.Change.Lo > line:
		return Regressed
	case m.Change.Hi <= line:
		return Within
	}
	return Noisy
}

// Row is one claim measured and judged.
type Row struct {
	Seed feature.Seed
	// Row and Says are the claim's; Bench the benchmark measured (its
	// full name but the side); A and B the sides.
	Row, Says, Package, Bench, A, B string
	// Method says how the sides were run against each other.
	Method string
	// Measures are the claim's own measure first, then the per-frame cost
	// it converts to, when the benchmark reports one.
	Measures []Measure
	// Judged is the unit of the measure the judgment rests on, Why why
	// that one.
	Judged, Why string
	Judgment    Judgment
	// Note says what the figures cannot show (Claim.Reached).
	Note string `json:",omitempty"`
}

// JudgedMeasure is the measure the judgment rests on (the first when none
// could be judged).
func (r Row) JudgedMeasure() Measure {
	for _, m := range r.Measures {
		if m.Unit == r.Judged {
			return m
		}
	}
	return r.Measures[0]
}

// sides are the values, round by round, of the stock side, its repeat and
// the patched side, for one unit.
type sides struct{ a, a2, b []float64 }

// measure makes a Measure of s.
func (s sides) measure(unit string, better Better, claim float64) Measure {
	m := Measure{Unit: unit, Better: better, Claim: claim}
	if count(s.a) == 0 || count(s.b) == 0 || count(s.a2) == 0 {
		m.Err = fmt.Sprintf("%s: a side has no result (A %d, A2 %d, B %d rounds)",
			unit, count(s.a), count(s.a2), count(s.b))
		return m
	}
	var err error
	if m.Change, err = paired(s.a, s.b); err != nil {
		m.Err = fmt.Sprintf("%s, B against A: %v", unit, err)
	} else if m.AA, err = paired(s.a, s.a2); err != nil {
		m.Err = fmt.Sprintf("%s, A2 against A: %v", unit, err)
	}
	return m
}

// perFrame converts a claimed change of a rate to the change of the CPU
// time each frame takes, the work being CPU-bound.
func perFrame(ratePct float64) float64 { return (1/(1+ratePct/100) - 1) * 100 }

// decide judges r on one of its measures. Under an emulator (accel "tcg")
// the wall clock is the emulator's: the measure with the smallest A/A
// floor carries the judgment. Elsewhere (kvm, the host) it is the claim's
// own measure, the one the seed's figures are in.
func (r *Row) decide(accel string) {
	ok := slices.IndexFunc(r.Measures, func(m Measure) bool { return m.Err == "" })
	if ok < 0 {
		r.Judged, r.Judgment = r.Measures[0].Unit, Unmeasured
		var why []string
		for _, m := range r.Measures {
			why = append(why, m.Err)
		}
		r.Why = strings.Join(why, "; ")
		return
	}
	best := ok
	if accel == "tcg" {
		for i, m := range r.Measures {
			if m.Err == "" && m.Floor() < r.Measures[best].Floor() {
				best = i
			}
		}
	}
	m := r.Measures[best]
	r.Judged, r.Judgment = m.Unit, m.judge()
	switch {
	case len(r.Measures) == 1:
		r.Why = "the claim's own measure"
	case accel != "tcg":
		r.Why = fmt.Sprintf("the claim's own measure (%s)", cmpAccel(accel))
	default:
		var floors []string
		for _, o := range r.Measures {
			if o.Err == "" {
				floors = append(floors, fmt.Sprintf("%s ±%.1f %%", o.Unit, o.Floor()))
			}
		}
		r.Why = "under TCG the smallest A/A floor (" + strings.Join(floors, ", ") + ")"
	}
}

func cmpAccel(accel string) string {
	if accel == "" {
		return "on the host"
	}
	return "under " + strings.ToUpper(accel)
}
