package vmtest

import (
	"slices"

	"github.com/xmitcheck/xmitcheck/internal/splat"
)

// Retry is the runner's policy for the one failure that is the
// emulator's, not the kernel's: under multi-threaded TCG a vCPU can run
// text another vCPU has just live-patched and trap on an int3 that is no
// longer there (splat.StaleInt3). What died of it runs again as before
// first: the artefact is rare per run, and single-threaded TCG, which runs
// the vCPUs in turn, takes away the parallel CPUs a race test needs (seed
// 003's fast path is seen only when two CPUs contend for one qdisc). The
// second time it runs under single-threaded TCG, which cannot run stale
// text; the third time its tests count as not tested. The zero Retry is
// ready to use.
type Retry struct {
	single bool
	tries  map[string]int
}

// Action is what the runner does after a boot ended early.
type Action int

const (
	// Record: not the artefact; the failure is the kernel's.
	Record Action = iota
	// Again: the artefact: run what died again (single-threaded from the
	// second time on: SingleThread).
	Again
	// Untested: the artefact a third time: what died counts as not
	// tested.
	Untested
)

// SingleThread reports whether the next boot runs single-threaded.
func (p *Retry) SingleThread() bool { return p.single }

// After decides about a boot that ended early. what names what died: "" for
// the boot itself, else the binary that was running. out and splats are
// what the boot left (out may be nil).
func (p *Retry) After(what string, out *Outcome, splats []Splat) Action {
	if !artefact(out, splats) {
		return Record
	}
	if p.tries == nil {
		p.tries = map[string]int{}
	}
	p.tries[what]++
	switch p.tries[what] {
	case 1:
		return Again
	case 2:
		p.single = true
		return Again
	}
	return Untested
}

// artefact reports whether a boot under TCG died of a stale int3.
func artefact(out *Outcome, splats []Splat) bool {
	if out == nil || out.Accel != "tcg" {
		return false
	}
	return splat.StaleInt3(out.Console) || slices.ContainsFunc(splats, func(s Splat) bool { return splat.StaleInt3(s.Lines) })
}
