package runner

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// RunMany runs the binaries on every kernel, jobs at once (matrix), and
// returns each kernel's run and what it printed.
func (o *Options) RunMany(
	ctx context.Context, ks []*kernels.Kernel, bins []vmtest.Binary, init string, jobs int,
) ([]*results.Run, []bytes.Buffer, error) {
	runs := make([]*results.Run, len(ks))
	errs := make([]error, len(ks))
	human := make([]bytes.Buffer, len(ks))
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i, k := range ks {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			runs[i], errs[i] = o.RunOne(ctx, k, o.NewBackend(k, init), bins, false, &human[i])
			if runs[i] != nil {
				fmt.Fprintf(Progress(), "xmitcheck: %s done: %v\n", k.Label(), runs[i].Counts())
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", ks[i].Label(), err)
		}
	}
	return runs, human, nil
}

// DefaultJobs is how many kernels run at once: one per core, as far as
// memory holds a guest and as much again for the host, at least one. A TCG
// guest leaves much of its cores idle (waiting on its timers and on the
// host's I/O): on this 2-core machine two at once took the six default
// kernels from 7 min to 4 min 6 s, every verdict the same.
func DefaultJobs(memoryMB int) int {
	n := runtime.NumCPU()
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		free := int(uint64(si.Freeram) * uint64(si.Unit) >> 20)
		n = min(n, free/(2*max(memoryMB, 1024)))
	}
	return max(n, 1)
}
