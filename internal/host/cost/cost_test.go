package cost

import (
	"fmt"
	"math"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

func TestParseLine(t *testing.T) {
	s, ok := ParseLine("suites/tun", "BenchmarkTap/threads=1/side=A-2 \t       1\t  12 ns/op\t 90164 rx-pps\t 0 lost/s")
	assert.Assert(t, ok)
	assert.Equal(t, s.Name, "BenchmarkTap/threads=1/side=A")
	assert.DeepEqual(t, s.Metrics, map[string]float64{"ns/op": 12, "rx-pps": 90164, "lost/s": 0})
	_, ok = ParseLine("suites/tun", "BenchmarkTap/threads=1/side=A-2 says hello")
	assert.Assert(t, !ok)
	s, ok = ParseLine("suites/tun", "BenchmarkTap/threads=1/side=A2#03-2 \t 1 \t 5 rx-pps")
	assert.Assert(t, ok)
	assert.Equal(t, s.Name, "BenchmarkTap/threads=1/side=A2", "round 4 of side A2")
}

// TestPaired checks the interval against a hand computation. Ratios 0.9,
// 1.0 and 1.1: the geometric mean of them, t(2) = 4.303 on their logs.
// Ratios 0, 0.5, 1 (a zero): the mean of them, 0.5, sd 0.5, the lower
// bound cut at -100 %.
func TestPaired(t *testing.T) {
	c, err := paired([]float64{10, 10, 10}, []float64{9, 10, 11})
	assert.NilError(t, err)
	logs := []float64{math.Log(0.9), 0, math.Log(1.1)}
	mean, sd := meanSD(logs)
	half := 4.303 * sd / math.Sqrt(3)
	assert.Assert(t, c.Geometric)
	assert.Assert(t, math.Abs(c.Pct-(math.Exp(mean)-1)*100) < 1e-9, "%+v", c)
	assert.Assert(t, math.Abs(c.Hi-(math.Exp(mean+half)-1)*100) < 1e-9, "%+v", c)
	assert.Equal(t, c.Rounds, 3)

	c, err = paired([]float64{10, 10, 10}, []float64{0, 5, 10})
	assert.NilError(t, err)
	assert.Assert(t, !c.Geometric)
	assert.Assert(t, math.Abs(c.Pct-(-50)) < 1e-9, "%+v", c)
	assert.Equal(t, c.Lo, -100.0)
	assert.Assert(t, math.Abs(c.Hi-(0.5+4.303*0.5/math.Sqrt(3)-1)*100) < 1e-9, "%+v", c)

	_, err = paired([]float64{10}, []float64{9})
	assert.ErrorContains(t, err, "1 rounds with a ratio", "one round has no interval")
	c, err = paired([]float64{0, 10, 10, 0}, []float64{0, 8, 8, 9})
	assert.NilError(t, err, "a round where the stock side lost nothing is left out")
	assert.Equal(t, c.Rounds, 2)
	assert.DeepEqual(t, c.Left, []string{"round 4: 0 against 9"})
	assert.Assert(t, math.Abs(tQuantile975(40)-2.021) < 0.001, "t(40) = %v", tQuantile975(40))
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		better     Better
		claim      float64
		change, aa Change
		want       Judgment
		why        string
	}{
		{Higher, -3, Change{Lo: -6, Hi: 2}, Change{Lo: -4, Hi: 4}, Within, "above claim - floor (-7)"},
		{Higher, -3, Change{Lo: -20, Hi: -10}, Change{Lo: -4, Hi: 4}, Regressed, "wholly below -7"},
		{Higher, -3, Change{Lo: -12, Hi: 0}, Change{Lo: -4, Hi: 4}, Noisy, "across -7"},
		{Lower, -100, Change{Lo: -100, Hi: -100}, Change{Lo: -30, Hi: 20}, Within, "lost nothing"},
		{Lower, -100, Change{Lo: -60, Hi: -20}, Change{Lo: -30, Hi: 20}, Regressed, "lost more than claim + floor (-70)"},
		{Lower, 0, Change{Lo: -5, Hi: 15}, Change{Lo: -10, Hi: 10}, Noisy, "across +10"},
	} {
		m := Measure{Better: tc.better, Claim: tc.claim, Change: tc.change, AA: tc.aa}
		assert.Equal(t, m.judge(), tc.want, tc.why)
	}
}

// lines makes the benchmark lines of rounds of BenchmarkTap/threads=1:
// each round A, A2, B with the rx-pps and cpu-ns/frame given.
func lines(a, a2, b []float64, cpuNoise float64) []Sample {
	var out []Sample
	for i := range a {
		for _, s := range []struct {
			side string
			v    float64
		}{{feature.SideA, a[i]}, {feature.SideB, b[i]}, {feature.SideA2, a2[i]}} {
			// cpu-ns/frame is the inverse of the rate, with less noise.
			cpu := 1e9 / 100000 * (1 + cpuNoise*float64(i%3-1))
			switch s.side {
			case feature.SideB:
				cpu *= a[i] / b[i]
			case feature.SideA2:
				cpu *= 1 + 2*cpuNoise*float64(i%2*2-1)
			}
			l := fmt.Sprintf("BenchmarkTap/threads=1/%s-2\t1\t0 ns/op\t%g rx-pps\t%g cpu-ns/frame\t5 lost/s", s.side, s.v, cpu)
			smp, ok := ParseLine("suites/tun", l)
			if !ok {
				panic(l)
			}
			out = append(out, smp)
		}
	}
	return out
}

func TestInBoot(t *testing.T) {
	a := []float64{100, 90, 110, 100, 95, 105}
	a2 := []float64{105, 85, 108, 99, 97, 100}
	b := []float64{99, 89, 109, 99, 94, 104}
	rows := InBoot(lines(a, a2, b, 0.002), "tcg")
	assert.Equal(t, len(rows), 2, "received and lost of 1 thread: %+v", rows)
	r := rows[0]
	assert.Equal(t, r.Row, "tap, 1 sending thread: received")
	assert.Equal(t, r.Measures[0].Change.Rounds, 6)
	assert.Equal(t, r.Judgment, Within, "%+v", r)
	assert.Equal(t, r.Judged, "cpu-ns/frame", "under TCG the quieter measure judges: %s", r.Why)
	assert.Equal(t, rows[1].Judgment, Regressed, "lost/s 5 → 5 against a claim of -100 %% with a floor of 0: %+v", rows[1])

	rows = InBoot(lines(a, a2, b, 0.001), "kvm")
	assert.Equal(t, rows[0].Judged, "rx-pps", "on KVM the claim's own measure judges")

	slow := []float64{60, 55, 66, 61, 58, 63}
	rows = InBoot(lines(a, a2, slow, 0.001), "kvm")
	assert.Equal(t, rows[0].Judgment, Regressed, "%+v", rows[0].Measures[0])
}

func TestInBootMissingSide(t *testing.T) {
	s := lines([]float64{100, 100}, []float64{100, 100}, []float64{99, 99}, 0)
	var noB []Sample
	for _, x := range s {
		if x.Name != "BenchmarkTap/threads=1/"+feature.SideB {
			noB = append(noB, x)
		}
	}
	rows := InBoot(noB, "tcg")
	assert.Equal(t, rows[0].Judgment, Unmeasured)
	assert.Assert(t, is.Contains(rows[0].Why, "a side has no result (A 2, A2 2, B 0 rounds)"))
}

// TestAcrossMaxRegression: a patched kernel 40 % slower regresses by more
// than 10 %; the same kernel on both sides does not.
func TestAcrossMaxRegression(t *testing.T) {
	mk := func(v ...float64) []Sample {
		var out []Sample
		for _, x := range v {
			out = append(out, Sample{Package: "suites/qdisc", Name: "BenchmarkContention/x",
				Metrics: map[string]float64{"rx-pps": x, "ns/op": 3}})
		}
		return out
	}
	base, base2 := mk(100, 95, 104, 99), mk(98, 97, 103, 100)
	rows := Across(base, base2, mk(60, 58, 61, 59), "tcg", 10)
	assert.Equal(t, len(rows), 1, "ns/op has no known direction: %+v", rows)
	assert.Equal(t, rows[0].Judgment, Regressed)
	rows = Across(base, base2, mk(101, 94, 103, 100), "tcg", 10)
	assert.Equal(t, rows[0].Judgment, Within)
}

// TestTCPStreamsRows: BenchmarkTCPStreams of suites/vhost gives the row
// of its stream count, judged on KVM by rx-Mbit/s against −3 %: upstream's
// −32 % for 8 streams regresses, the same rate on both sides does not.
// The pattern of the cost pass runs it.
func TestTCPStreamsRows(t *testing.T) {
	mk := func(a, b []float64) []Sample {
		var out []Sample
		for i := range a {
			for _, s := range []struct {
				side string
				v    float64
			}{{feature.SideA, a[i]}, {feature.SideA2, a[(i+1)%len(a)]}, {feature.SideB, b[i]}} {
				out = append(out, Sample{Package: "suites/vhost", Name: "BenchmarkTCPStreams/streams=8/" + s.side,
					Metrics: map[string]float64{"rx-Mbit/s": s.v, "cpu-ns/KiB": 1e6 / s.v}})
			}
		}
		return out
	}
	a := []float64{13500, 13400, 13600, 13550, 13450, 13500}
	rows := InBoot(mk(a, []float64{9130, 9100, 9200, 9150, 9080, 9130}), "kvm")
	assert.Equal(t, len(rows), 1, "%+v", rows)
	assert.Equal(t, rows[0].Row, "TCP, 8 streams through a tap (vhost-net)")
	assert.Equal(t, rows[0].Judged, "rx-Mbit/s")
	assert.Equal(t, rows[0].Judgment, Regressed, "%s", rows[0].Line())
	assert.Equal(t, len(rows[0].Measures), 2, "rx-Mbit/s and cpu-ns/KiB")
	rows = InBoot(mk(a, a), "kvm")
	assert.Equal(t, rows[0].Judgment, Within, "%s", rows[0].Line())
	assert.Assert(t, is.Contains(Benchmarks(false), "BenchmarkTCPStreams"))
}

// TestNotReached: a tap row whose stock side never tail-dropped says the
// flag's path was never reached.
func TestNotReached(t *testing.T) {
	s := lines([]float64{100, 90, 110}, []float64{100, 95, 105}, []float64{99, 91, 108}, 0.001)
	assert.Check(t, is.Equal(InBoot(s, "tcg")[0].Note, ""), "no tun_lost/s reported: nothing to say")
	for i := range s {
		s[i].Metrics["tun_lost/s"] = 0
	}
	rows := InBoot(s, "tcg")
	assert.Check(t, is.Contains(rows[0].Note, "tun_lost/s was 0 in every round"), "%+v", rows[0])
	assert.Check(t, is.Contains(rows[0].Line(), "measured no cost of the patch"))
	for i := range s {
		s[i].Metrics["tun_lost/s"] = 3
	}
	assert.Check(t, is.Equal(InBoot(s, "tcg")[0].Note, ""))
}

// TestRoundsByNumber: a side whose run failed in round 1 leaves that round
// empty; round 2 (#02) pairs with round 2, not round 1.
func TestRoundsByNumber(t *testing.T) {
	var s []Sample
	for _, l := range []string{
		"BenchmarkRedirect/side=A-2\t1\t100 tx-pps", "BenchmarkRedirect/side=A2-2\t1\t100 tx-pps",
		"BenchmarkRedirect/side=B-2\t1\t80 tx-pps",
		"BenchmarkRedirect/side=A#01-2\t1\t50 tx-pps", "BenchmarkRedirect/side=A2#01-2\t1\t50 tx-pps",
		"BenchmarkRedirect/side=A#02-2\t1\t200 tx-pps", "BenchmarkRedirect/side=A2#02-2\t1\t200 tx-pps",
		"BenchmarkRedirect/side=B#02-2\t1\t160 tx-pps",
	} {
		smp, ok := ParseLine("suites/devmap", l)
		assert.Assert(t, ok, l)
		s = append(s, smp)
	}
	v := rounds(s, "suites/devmap", "BenchmarkRedirect", "tx-pps")
	b := v["BenchmarkRedirect/side=B"]
	assert.Equal(t, len(b), 3)
	assert.Check(t, math.IsNaN(b[1]), "round 1 of B failed: %v", b)
	c, err := paired(v["BenchmarkRedirect/side=A"], b)
	assert.NilError(t, err)
	assert.Check(t, math.Abs(c.Pct-(-20)) < 1e-9, "B is 80 %% of A in both rounds it ran: %+v", c)
}

// TestScaledClaim: 002's sender claim (-63.9 % where stock lost 85.9 %)
// is scaled to a stock side that lost 21.5 %: a quarter of it.
func TestScaledClaim(t *testing.T) {
	var s []Sample
	for r, v := range [][3]float64{{100, 100, 80}, {110, 105, 85}, {90, 95, 70}} {
		for i, side := range []string{feature.SideA, feature.SideA2, feature.SideB} {
			name := "BenchmarkUDPStream/" + side
			if r > 0 {
				name += fmt.Sprintf("#%02d", r)
			}
			smp, ok := ParseLine("suites/tun", fmt.Sprintf("%s-2\t1\t%g tx-Mbit/s\t21.5 lost-%%\t50 sys-ms/s", name, v[i]))
			assert.Assert(t, ok)
			s = append(s, smp)
		}
	}
	rows := InBoot(s, "kvm")
	assert.Assert(t, is.Len(rows, 3), "the sender's rate, the receiver's (not reported here) and the system CPU")
	want := change(4679.65, 1687.92) * 21.5 / netperfLost
	assert.Check(t, math.Abs(rows[0].Measures[0].Claim-want) < 1e-9, "%v, want %v", rows[0].Measures[0].Claim, want)
	assert.Check(t, is.Contains(rows[0].Note, "the claim is scaled by 0.25"), rows[0].Note)
}
