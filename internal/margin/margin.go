// Package margin keeps, per call site, how close the time-bounded waits of
// a test binary came to their limits: the settle waits and step bounds of
// internal/counters and internal/dropmon note each wait here, the suites'
// TestMain prints the worst of each site as one line when the binary ends,
// and the runner reads the lines back. A soak (xmitcheck run -count N)
// reports the worst case over its rounds, so a bound that a healthy kernel
// nearly reaches under load shows before it turns into a flaky failure.
package margin

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Site is one call site's waits.
type Site struct {
	// Site is "suite/file.go:line", the first caller outside the waiting
	// helpers.
	Site string `json:"site"`
	// Limit is the site's bound (the largest, if it varies).
	Limit time.Duration `json:"limit"`
	// Worst is the longest wait that ended within its limit.
	Worst time.Duration `json:"worst"`
	// N waits ended within their limit, Timeouts did not.
	N        int `json:"n"`
	Timeouts int `json:"timeouts,omitempty"`
}

// Left is the share of the limit the worst wait left unused, 0 to 1.
func (s Site) Left() float64 {
	if s.Limit <= 0 {
		return 0
	}
	return 1 - float64(s.Worst)/float64(s.Limit)
}

func (s Site) String() string {
	t := ""
	if s.Timeouts > 0 {
		t = fmt.Sprintf(", %d timed out", s.Timeouts)
	}
	return fmt.Sprintf("%s: worst %v of %v (%.0f%% left), %d waits%s", s.Site, s.Worst.Round(time.Millisecond), s.Limit, 100*s.Left(), s.N, t)
}

var (
	mu    sync.Mutex
	sites = map[string]*Site{}
)

// Note records that a wait bounded by limit took took (timedOut: it did
// not end within limit), for the first caller outside internal/.
func Note(limit, took time.Duration, timedOut bool) {
	site := callSite()
	mu.Lock()
	defer mu.Unlock()
	s := sites[site]
	if s == nil {
		s = &Site{Site: site}
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

// prefix starts the line Line prints.
const prefix = `xmitcheck:{"margins":`

// Line is every site noted so far, as one line for the runner.
func Line() string {
	mu.Lock()
	defer mu.Unlock()
	var all []Site
	for _, k := range slices.Sorted(maps.Keys(sites)) {
		all = append(all, *sites[k])
	}
	b, err := json.Marshal(struct {
		Margins []Site `json:"margins"`
	}{all})
	if err != nil {
		panic(err) // strings and numbers only
	}
	return "xmitcheck:" + string(b)
}

// Parse reads a Line back from a line of a test binary's output.
func Parse(line string) ([]Site, bool) {
	i := strings.Index(line, prefix)
	if i < 0 {
		return nil, false
	}
	var v struct {
		Margins []Site `json:"margins"`
	}
	if json.Unmarshal([]byte(line[i+len("xmitcheck:"):]), &v) != nil {
		return nil, false
	}
	return v.Margins, true
}

// Merge folds b into a, site by site: the larger limit, the worst wait,
// the counts added.
func Merge(a, b []Site) []Site {
	m := map[string]Site{}
	for _, s := range slices.Concat(a, b) {
		o, ok := m[s.Site]
		if !ok {
			m[s.Site] = s
			continue
		}
		m[s.Site] = Site{Site: s.Site, Limit: max(o.Limit, s.Limit), Worst: max(o.Worst, s.Worst), N: o.N + s.N, Timeouts: o.Timeouts + s.Timeouts}
	}
	var out []Site
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}
