// Package margin keeps, per call site, how close the time-bounded waits of
// a test binary came to their limits: the settle waits and step bounds of
// internal/guest/counters and dropmon note each wait here, the suites'
// TestMain prints the worst of each site as one line when the binary ends,
// and the runner reads the lines back. A soak (xmitcheck run -count N)
// reports the worst case over its rounds, so a bound that a healthy kernel
// nearly reaches under load shows before it turns into a flaky failure.
package margin

import (
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

var (
	mu    sync.Mutex
	sites = map[string]*feature.Margin{}
)

// Note records that a wait bounded by limit took took (timedOut: it did
// not end within limit), for the first caller outside internal/.
func Note(limit, took time.Duration, timedOut bool) {
	note(callSite(), limit, took, timedOut)
}

// NoteStill records, for the caller's wait (counters.WaitMoving), the
// longest time it saw the value stand still against the bound still
// (timedOut: it stood still that long, and the wait failed); the site is
// the wait's, named with " still" after it.
func NoteStill(still, took time.Duration, timedOut bool) {
	note(callSite()+" still", still, took, timedOut)
}

func note(site string, limit, took time.Duration, timedOut bool) {
	mu.Lock()
	defer mu.Unlock()
	s := sites[site]
	if s == nil {
		s = &feature.Margin{Site: site}
		sites[site] = s
	}
	s.Limit = max(s.Limit, limit)
	if timedOut {
		s.Timeouts++
		return
	}
	s.N++
	s.Worst = max(s.Worst, took)
}

// internal prefixes the functions of this module's internal packages.
const internal = "github.com/xmitcheck/xmitcheck/internal/"

// callSite is the first frame outside the non-test files of this module's
// internal/ packages (the waiting helpers) and the runtime: the wait a
// test asked for.
func callSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		helper := strings.HasPrefix(f.Function, internal) && !strings.HasSuffix(f.File, "_test.go")
		if !helper && !strings.HasPrefix(f.Function, "runtime.") && f.File != "" {
			return filepath.Join(filepath.Base(filepath.Dir(f.File)), filepath.Base(f.File)) + fmt.Sprintf(":%d", f.Line)
		}
		if !more {
			return "unknown"
		}
	}
}

// Line is every site noted so far, as one line for the runner.
func Line() string {
	mu.Lock()
	defer mu.Unlock()
	var all []feature.Margin
	for _, k := range slices.Sorted(maps.Keys(sites)) {
		all = append(all, *sites[k])
	}
	return feature.MarginsLine(all)
}
