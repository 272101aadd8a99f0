package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// laneBackend plays boots that run at the same time: each waits until
// together boots have started (or fails the boot after a while, which a
// runner that boots one VM after the other meets), then each binary passes
// TestX, except crash, under which the kernel panics.
type laneBackend struct {
	together int
	crash    string

	mu      sync.Mutex
	jobs    [][]string
	started chan struct{}
}

func (f *laneBackend) Name() string { return "fake" }

func (f *laneBackend) Run(
	ctx context.Context, k *kernels.Kernel, job vmtest.Job, sink vmtest.Sink,
) (*vmtest.Outcome, error) {
	f.mu.Lock()
	var names []string
	for _, b := range job.Binaries {
		names = append(names, b.Name)
	}
	f.jobs = append(f.jobs, names)
	f.mu.Unlock()
	f.started <- struct{}{}
	out := &vmtest.Outcome{Accel: "tcg", Total: time.Second}
	for range f.together - 1 {
		select {
		case <-f.started:
		case <-time.After(5 * time.Second):
			return out, errors.New("the other VMs never started")
		}
	}
	for _, b := range job.Binaries {
		sink.Start(b)
		sink.Output(b, []byte("=== RUN   TestX\n"))
		if b.Name == f.crash {
			out.Console = []string{"[ 1.0] Kernel panic - not syncing: boom"}
			sink.Splat(vmtest.Splat{Kind: "panic", Lines: out.Console})
			return out, fmt.Errorf("%w: kernel panic", vmtest.ErrCrash)
		}
		sink.Output(b, []byte("--- PASS: TestX (0.00s)\nPASS\n"))
		sink.Exit(b, 0)
	}
	return out, nil
}

func newLaneBackend(together int, crash string) *laneBackend {
	return &laneBackend{together: together, crash: crash, started: make(chan struct{}, 2*together)}
}

func laneBins(names ...string) []vmtest.Binary {
	var bins []vmtest.Binary
	for _, n := range names {
		bins = append(bins, vmtest.Binary{Name: "example.org/suites/" + n})
	}
	return bins
}

func TestDeal(t *testing.T) {
	bins := laneBins("devmap", "qdisc", "tun", "vhost")
	assert.Check(t, is.DeepEqual(deal(bins, 2), [][]vmtest.Binary{
		{bins[0], bins[2]}, {bins[1], bins[3]},
	}))
	assert.Check(t, is.DeepEqual(deal(bins, 1), [][]vmtest.Binary{bins}))
	assert.Check(t, is.Len(deal(bins[:1], 4), 1), "never a VM without a binary")
}

func TestLanes(t *testing.T) {
	k := &kernels.Kernel{Name: "debian:7.3"}
	assert.Check(t, is.Equal((&Options{VMs: 2}).lanes(k, 4), 2))
	assert.Check(t, is.Equal((&Options{VMs: 8}).lanes(k, 4), 4))
	assert.Check(t, is.Equal((&Options{}).lanes(k, 4), 1), "no --vms default picked: one")
	assert.Check(t, is.Equal((&Options{VMs: 2}).lanes(&kernels.Kernel{Name: "host", Host: true}, 4), 1),
		"the host's binaries share its kernel: one at a time")

	s := Config{Options: Options{Backend: "native", CPUs: runtime.NumCPU(), MemoryMB: 1024}}
	s.autoVMs()
	assert.Check(t, is.Equal(s.VMs, 1), "a VM's vCPUs take every core: one VM")
	s = Config{Options: Options{Backend: "native", CPUs: 1, MemoryMB: 1024}}
	s.autoVMs()
	assert.Check(t, is.Equal(s.VMs, max(1, min(runtime.NumCPU(), DefaultJobs(1024)))),
		"one vCPU a VM: a VM per core, as far as memory allows")
	for _, s := range []Config{{Options: Options{Backend: "vng"}}, {Options: Options{Backend: "native"}, Verbose: true}} {
		s.autoVMs()
		assert.Check(t, is.Equal(s.VMs, 1), "%s, -v %v", s.Backend, s.Verbose)
	}
}

// TestRunOneInLanes: with --vms 2 the binaries run in two VMs at once and
// come back as one run, in their order; a kernel panic in one VM fails the
// test it hit and leaves the other VM's results as they were.
func TestRunOneInLanes(t *testing.T) {
	k := &kernels.Kernel{Name: "debian:7.3", Release: "7.3.4"}
	bins := laneBins("a", "b", "c")
	status := func(r *results.Run) []string {
		var out []string
		for _, x := range r.Tests {
			out = append(out, results.ShortPackage(x.Package)+" "+x.Name+" "+string(x.Status))
		}
		return out
	}

	b := newLaneBackend(2, "")
	r, err := (&Options{VMs: 2}).RunOne(context.Background(), k, b, bins, false, io.Discard)
	assert.NilError(t, err)
	assert.Check(t, r.Err == nil, "%v", r.Err)
	slices.SortFunc(b.jobs, func(x, y []string) int { return strings.Compare(x[0], y[0]) })
	assert.Check(t, is.DeepEqual(b.jobs, [][]string{{bins[0].Name, bins[2].Name}, {bins[1].Name}}))
	assert.Check(t, is.DeepEqual(status(r), []string{
		"suites/a  pass", "suites/a TestX pass",
		"suites/b  pass", "suites/b TestX pass",
		"suites/c  pass", "suites/c TestX pass",
	}))

	b = newLaneBackend(2, bins[1].Name)
	r, err = (&Options{VMs: 2}).RunOne(context.Background(), k, b, bins, false, io.Discard)
	assert.NilError(t, err)
	assert.Check(t, errors.Is(r.Err, vmtest.ErrCrash), "%v", r.Err)
	assert.Check(t, is.Len(b.jobs, 2), "nothing left to boot again for")
	assert.Check(t, is.DeepEqual(status(r), []string{
		"suites/a  pass", "suites/a TestX pass",
		"suites/b  fail", "suites/b TestX fail",
		"suites/c  pass", "suites/c TestX pass",
	}))
	assert.Check(t, is.DeepEqual(r.Counts(), results.Tally{Pass: 2, Fail: 1}))
}
