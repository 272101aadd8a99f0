package results

import (
	"fmt"
	"io"
	"time"
)

// WriteSummary writes, per kernel, its verdict line and the output of every
// failed test, then the plain closing line "N passed, N failed, N skipped".
func WriteSummary(w io.Writer, runs []*Run) {
	var tp, tf, ts int
	for _, r := range runs {
		p, f, s := r.Counts()
		tp, tf, ts = tp+p, tf+f, ts+s
		for _, t := range r.Tests {
			if t.Status != Fail || r.hasChildren(t) || (t.Name == "" && r.anyFailed(t.Package)) {
				continue
			}
			name := shortPackage(t.Package) + "." + t.Name
			if t.Name == "" {
				name = shortPackage(t.Package) + " (the test binary itself)"
			}
			fmt.Fprintf(w, "--- FAIL: %s %s\n", r.Kernel, name)
			for _, l := range append(t.Output, t.Kernel...) {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
		timing := ""
		if r.Total > 0 {
			timing = fmt.Sprintf(" (boot-to-first-test %v, total %v)", r.BootToFirstTest.Round(time.Millisecond), r.Total.Round(time.Millisecond))
		}
		fmt.Fprintf(w, "%s: %d passed, %d failed, %d skipped%s\n", r.Kernel, p, f, s, timing)
		if r.Err != nil {
			fmt.Fprintf(w, "%s: %v\n", r.Kernel, r.Err)
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", tp, tf, ts)
}
