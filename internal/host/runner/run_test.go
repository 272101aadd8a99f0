package runner

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// staleInt3 is the report of a vCPU that ran an int3 a live patch had
// already taken out (the byte before RIP is not 0xcc).
var staleInt3 = []string{
	"[   13.78] Oops: int3: 0000 [#1] SMP NOPTI",
	"[   13.78] RIP: 0010:__skb_get_hash_net+0x5d/0x270",
	"[   13.78] Code: 48 83 c4 18 0f <1f> 44 00 00 0f b7 44 24 0a",
}

// int3Backend plays one boot per job: on the boots listed in staleBoot the
// boot itself dies of the TCG artefact, on those in stale the first binary
// it runs does, after failing TestY (unless told to skip it) and while in
// TestZ, and on those in gap
// the guest does between its first and second binary. Every other binary
// passes TestX. It records each boot's job.
type int3Backend struct {
	stale, staleBoot, gap map[int]bool
	jobs                  []vmtest.Job
}

func (f *int3Backend) Name() string { return "fake" }

func (f *int3Backend) Run(
	ctx context.Context, k *kernels.Kernel, job vmtest.Job, sink vmtest.Sink,
) (*vmtest.Outcome, error) {
	boot := len(f.jobs)
	f.jobs = append(f.jobs, job)
	out := &vmtest.Outcome{Accel: "tcg"}
	artefact := func() { sink.Splat(vmtest.Splat{Kind: "panic", Lines: staleInt3}); out.Console = staleInt3 }
	if f.staleBoot[boot] {
		artefact()
		return out, fmt.Errorf("%w: %w: kernel panic", vmtest.ErrCrash, vmtest.ErrNoBoot)
	}
	for i, b := range job.Binaries {
		if i == 1 && f.gap[boot] {
			artefact()
			return out, fmt.Errorf("%w: kernel panic", vmtest.ErrCrash)
		}
		sink.Start(b)
		if i == 0 && f.stale[boot] {
			if !slices.Contains(b.Args, "-test.skip=^(?:TestY)$") {
				sink.Output(b, []byte("=== RUN   TestY\n    y_test.go:9: 256 frames stranded\n--- FAIL: TestY (0.00s)\n"))
			}
			sink.Output(b, []byte("=== RUN   TestZ\n"))
			artefact()
			return out, fmt.Errorf("%w: kernel panic", vmtest.ErrCrash)
		}
		sink.Output(b, []byte("=== RUN   TestX\n--- PASS: TestX (0.00s)\nPASS\n"))
		sink.Exit(b, 0)
	}
	return out, nil
}

func TestRunOneStaleInt3(t *testing.T) {
	bins := []vmtest.Binary{{Name: "example.org/suites/a"}, {Name: "example.org/suites/b"}}
	k := &kernels.Kernel{Name: "debian:7.3", Release: "7.3.4"}
	o := &Options{}
	status := func(r *results.Run, pkg, name string) results.Status {
		for _, t := range r.Tests {
			if t.Package == pkg && t.Name == name {
				return t.Status
			}
		}
		return ""
	}

	t.Run("again as before", func(t *testing.T) {
		b := &int3Backend{stale: map[int]bool{0: true}}
		r, err := o.RunOne(context.Background(), k, b, bins, false, io.Discard)
		assert.NilError(t, err)
		assert.Assert(t, is.Len(b.jobs, 2))
		assert.Check(t, !b.jobs[0].SingleThreadTCG, "the first boot is multi-threaded")
		assert.Check(t, !b.jobs[1].SingleThreadTCG, "the first retry keeps the parallel vCPUs race tests need")
		assert.Check(t, is.Len(b.jobs[1].Binaries, 2), "the crashed binary and the one not yet run")
		assert.Check(t, is.DeepEqual(b.jobs[1].Binaries[0].Args, []string{"-test.skip=^(?:TestY)$"}),
			"the retry skips the test the killed try finished")
		assert.Check(t, is.DeepEqual(b.jobs[1].Binaries[1].Args, []string(nil)))
		assert.Check(t, !strings.Contains(fmt.Sprint(r.Err), "could not be tested"), r.Err)
		assert.Check(t, strings.Contains(strings.Join(r.Notes, "\n"), "again as before"), r.Notes)
		assert.Check(t, is.Equal(status(r, bins[0].Name, "TestY"), results.Fail), "a failure before the artefact is kept")
		assert.Check(t, is.Equal(status(r, bins[0].Name, "TestX"), results.Pass))
	})
	t.Run("single-threaded the second time, for that binary alone", func(t *testing.T) {
		b := &int3Backend{stale: map[int]bool{0: true, 1: true}}
		r, err := o.RunOne(context.Background(), k, b, bins, false, io.Discard)
		assert.NilError(t, err)
		assert.Assert(t, is.Len(b.jobs, 4))
		assert.Check(t, b.jobs[2].SingleThreadTCG)
		want := bins[0]
		want.Args = []string{"-test.skip=^(?:TestY)$"}
		assert.Check(t, is.DeepEqual(b.jobs[2].Binaries, []vmtest.Binary{want}))
		assert.Check(t, !b.jobs[3].SingleThreadTCG, "the binaries after it run multi-threaded again")
		assert.Check(t, is.DeepEqual(b.jobs[3].Binaries, bins[1:]))
		assert.Check(t, !strings.Contains(fmt.Sprint(r.Err), "could not be tested"), r.Err)
		assert.Check(t, strings.Contains(strings.Join(r.Notes, "\n"), "alone single-threaded"), r.Notes)
	})
	t.Run("at boot", func(t *testing.T) {
		b := &int3Backend{staleBoot: map[int]bool{0: true}}
		r, err := o.RunOne(context.Background(), k, b, bins, false, io.Discard)
		assert.NilError(t, err)
		assert.Assert(t, is.Len(b.jobs, 2))
		assert.Check(t, !b.jobs[1].SingleThreadTCG)
		assert.Check(t, r.Err)
		tally := r.Counts()
		assert.Check(t, is.Equal(tally.Fail, 0), "the dead boot's panic is not a failure: %+v", tally)
		assert.Check(t, is.Equal(tally.Pass, 2), "%+v", tally)
	})
	t.Run("between binaries", func(t *testing.T) {
		b := &int3Backend{gap: map[int]bool{0: true}}
		r, err := o.RunOne(context.Background(), k, b, bins, false, io.Discard)
		assert.NilError(t, err)
		assert.Assert(t, is.Len(b.jobs, 2))
		assert.Check(t, is.DeepEqual(b.jobs[1].Binaries, bins[1:]), "the binary not yet run goes again")
		assert.Check(t, r.Err)
		tally := r.Counts()
		assert.Check(t, is.Equal(tally.Fail, 0), "the artefact is not a failure: %+v", tally)
		assert.Check(t, is.Equal(tally.Pass, 2), "%+v", tally)
	})
	t.Run("three times keeps the failures of the tries", func(t *testing.T) {
		b := &int3Backend{stale: map[int]bool{0: true, 1: true, 2: true}}
		r, err := o.RunOne(context.Background(), k, b, bins, false, io.Discard)
		assert.NilError(t, err)
		assert.Check(t, is.ErrorContains(r.Err, "could not be tested"))
		assert.Check(t, !b.jobs[len(b.jobs)-1].SingleThreadTCG, "the rest run multi-threaded")
		assert.Check(t, is.Equal(status(r, bins[0].Name, "TestY"), results.Fail), "a real failure stays")
		assert.Check(t, is.Equal(status(r, bins[0].Name, "TestZ"), results.Fail), "TestZ ended with the boot")
		assert.Check(t, is.Equal(status(r, bins[0].Name, "TestZ"), results.Fail), "TestZ ended with the boot")
		for _, x := range r.Tests {
			if x.Name == "TestY" {
				assert.Check(t, !x.Artefact, "TestY failed before the artefact")
			}
			if x.Name == "TestZ" {
				assert.Check(t, x.Artefact, "TestZ is what the emulator ended")
			}
		}
		assert.Check(t, is.Equal(status(r, bins[1].Name, "TestX"), results.Pass))
	})
}

// listBackend plays a boot whose binaries ran with -test.list: each prints
// the names of its tests, and the margins line testmain ends with, and
// exits 0 without a PASS.
type listBackend struct{}

func (listBackend) Name() string { return "fake" }

func (listBackend) Run(
	_ context.Context, _ *kernels.Kernel, job vmtest.Job, sink vmtest.Sink,
) (*vmtest.Outcome, error) {
	for _, b := range job.Binaries {
		sink.Start(b)
		sink.Output(b, []byte("TestProbe\nTestClassify\nxmitcheck:{\"margins\":null}\n"))
		sink.Exit(b, 0)
	}
	return &vmtest.Outcome{Accel: "tcg"}, nil
}

// TestRunList: run -list lists the tests; a binary that exits 0 without a
// verdict of its own did not fail.
func TestRunList(t *testing.T) {
	bins := []vmtest.Binary{{Name: "example.org/suites/tun"}}
	k := &kernels.Kernel{Name: "debian:7.3", Release: "7.3.4"}
	r, err := (&Options{}).RunOne(context.Background(), k, listBackend{}, bins, false, io.Discard)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(r.Counts(), results.Tally{}))
	assert.Check(t, !r.Failed() && !r.Mismatched(), "%v %v", r.Counts(), r.Verdicts)
	var b strings.Builder
	results.WriteList(&b, []*results.Run{r})
	assert.Check(t, is.Equal(b.String(), "debian:7.3 (7.3.4) suites/tun:\n    TestProbe\n    TestClassify\n"))
}
