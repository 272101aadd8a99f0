package runner

import (
	"context"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// A kernel's test binaries can run in several VMs of it at once, lanes:
// each lane boots the kernel for its share of the binaries, one after the
// other as a single VM would, and records them in a Run of its own; the
// runs are then joined (results.Run.Merge) and judged as one. A test
// binary always runs alone in its guest, so what a test sees of the kernel
// (its log, its load, its counters) is its own, as before; what changes is
// that the host's cores are shared with the other lane's guest, as they
// are when matrix runs two kernels at once.

// lanes is how many VMs run k's binaries at once: VMs, never more than
// there are binaries. The host runs its binaries one after the other: they
// would share its one kernel, its log and its load.
func (o *Options) lanes(k *kernels.Kernel, bins int) int {
	if k.Host || o.VMs <= 1 {
		return 1
	}
	return min(o.VMs, bins)
}

// autoVMs is VMs 0 for run, compare and bisect: as many VMs as the host
// has cores for every vCPU of each (--cpus), as far as memory allows, at
// least one. A race test needs its guest's vCPUs to run in parallel; a
// second guest on the same cores takes that away, and the race tests then
// catch less (docs/usage.md has the negative control's figures), so VMs
// share no core unless --vms says so. -v prints the tests' output as it
// comes, which one VM at a time keeps readable, and vng's boot costs
// several native boots: both keep one.
func (c *Config) autoVMs() {
	if c.VMs != 0 {
		return
	}
	c.VMs = 1
	if !c.Verbose && c.Backend == "native" {
		c.VMs = max(1, min(runtime.NumCPU()/max(c.CPUs, 1), DefaultJobs(c.MemoryMB)))
	}
}

// deal deals bins among n lanes, round robin in the order given, so that
// each lane keeps the binaries' relative order.
func deal(bins []vmtest.Binary, n int) [][]vmtest.Binary {
	n = max(1, min(n, len(bins)))
	lanes := make([][]vmtest.Binary, n)
	for i, b := range bins {
		lanes[i%n] = append(lanes[i%n], b)
	}
	return lanes
}

// runLanes deals bins among n lanes, runs each (RunLane) at once and joins
// their runs, the tests in the binaries' order. The first lane that cannot
// record its results stops the others.
func (o *Options) runLanes(ctx context.Context, k *kernels.Kernel, b vmtest.Backend, bins []vmtest.Binary, n int,
	verbose io.Writer) (*results.Run, []error, error) {
	started := time.Now()
	lanes := deal(bins, n)
	if len(lanes) == 1 {
		return o.RunLane(ctx, k, b, lanes[0], verbose, started)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runs := make([]*results.Run, len(lanes))
	errs := make([][]error, len(lanes))
	fatal := make([]error, len(lanes))
	var wg sync.WaitGroup
	for i, bins := range lanes {
		wg.Go(func() {
			runs[i], errs[i], fatal[i] = o.RunLane(ctx, k, b, bins, verbose, started)
			if fatal[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	var all []error
	for i := range lanes {
		if fatal[i] != nil {
			return nil, nil, fatal[i]
		}
		all = append(all, errs[i]...)
	}
	order := make([]string, len(bins))
	for i, bin := range bins {
		order[i] = bin.Name
	}
	run := runs[0]
	run.Merge(runs[1:]...)
	run.SortPackages(order)
	return run, all, nil
}
