package results

import (
	"time"

	"github.com/xmitcheck/xmitcheck/internal/host/cost"
)

// Snapshot is one kernel's run as a file holds it (the matrix's
// results.json, read by the report): what the run's writers need, without
// the event stream.
type Snapshot struct {
	// Kernel is the label ("debian:7.3 (7.3.4-1~bpo13+1)"); Name what was
	// asked for ("debian:7.3"), Release its uname -r, Package the Debian
	// package and version it came from (empty for builds and paths).
	Kernel, Name, Release, Package string
	// Accel is how the guest ran: "kvm", "tcg", or "host".
	Accel                  string
	BootToFirstTest, Total time.Duration
	// Err is why the run could not finish, if it could not.
	Err          string         `json:",omitempty"`
	ExpectSource string         `json:",omitempty"`
	Verdicts     []Verdict      `json:",omitempty"`
	Misses       []FeatureMiss  `json:",omitempty"`
	Notes        []string       `json:",omitempty"`
	Tests        []SnapshotTest `json:",omitempty"`
	// Benchmarks are the benchmark result lines, go test's format.
	Benchmarks []string `json:",omitempty"`
	// Costs are the cost rows measured on the kernel (run --cost), and
	// CostSamples the benchmark results they were made of.
	Costs       []cost.Row    `json:",omitempty"`
	CostSamples []cost.Sample `json:",omitempty"`
}

// SnapshotTest is one leaf test: its status, duration, and why it failed,
// skipped or was an expected failure.
type SnapshotTest struct {
	Package, Name string
	Status        Status
	Elapsed       time.Duration
	// Why is the failure output (with any kernel report) or the reason of
	// a skip or expected failure.
	Why string `json:",omitempty"`
}

// Snapshot returns the run's snapshot; the caller fills in what the run
// does not know (Name, Release, Package).
func (r *Run) Snapshot() Snapshot {
	s := Snapshot{
		Kernel: r.Kernel, Accel: r.Accel, BootToFirstTest: r.BootToFirstTest, Total: r.Total,
		ExpectSource: r.ExpectSource, Verdicts: r.Verdicts, Misses: r.Misses, Notes: r.notes(),
		Benchmarks: r.BenchmarkLines(), Costs: r.Costs, CostSamples: r.CostSamples,
	}
	if r.Err != nil {
		s.Err = r.Err.Error()
	}
	for _, t := range r.Leaves() {
		st := SnapshotTest{Package: ShortPackage(t.Package), Name: t.Name, Status: t.Status, Elapsed: t.Elapsed}
		switch t.Status {
		case Fail:
			st.Why = t.transcript()
			if t.Judged != "" {
				st.Why = t.judgedTranscript()
			}
		case Skip, XFail:
			st.Why = t.Reason()
		}
		s.Tests = append(s.Tests, st)
	}
	return s
}

// Leaves are the run's leaf tests (no subtests of their own), in the order
// they started: what the reports list.
func (r *Run) Leaves() []*Test {
	var out []*Test
	for _, t := range r.Tests {
		if t.Name != "" && !r.hasChildren(t) {
			out = append(out, t)
		}
	}
	return out
}

// Why is why the test ended as it did, on one line: the first failing
// line of a failure, the reason of a skip or an expected failure; "" for
// a pass.
func (t *Test) Why() string {
	switch t.Status {
	case Fail:
		if t.Judged != "" {
			return t.Judged
		}
		return t.firstFailure()
	case Skip, XFail:
		return t.Reason()
	}
	return ""
}
