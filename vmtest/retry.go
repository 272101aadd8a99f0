package vmtest

import (
	"slices"

	"github.com/xmitcheck/xmitcheck/internal/splat"
)

// Retry is the runner's policy for the one failure that is the
// emulator's, not the kernel's: under multi-threaded TCG a vCPU can run
// text another vCPU has just live-patched and trap on an int3 that is no
// longer there (splat.StaleInt3). What died of it runs again under
// single-threaded TCG, which cannot run stale text; a second time, its
// tests count as not tested. The zero Retry is ready to use.
type Retry struct {
	single  bool
	retried map[string]bool
}

// Action is what the runner does after a boot ended early.
type Action int

const (
	// Record: not the artefact; the failure is the kernel's.
	Record Action = iota
	// Again: the artefact, the first time for what died: run it again,
	// single-threaded.
	Again
	// Untested: the artefact again, single-threaded: what died counts as
	// not tested.
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
	if p.retried[what] {
		return Untested
	}
	if p.retried == nil {
		p.retried = map[string]bool{}
	}
	p.retried[what], p.single = true, true
	return Again
}

// artefact reports whether a boot under TCG died of a stale int3.
func artefact(out *Outcome, splats []Splat) bool {
	if out == nil || out.Accel != "tcg" {
		return false
	}
	return splat.StaleInt3(out.Console) || slices.ContainsFunc(splats, func(s Splat) bool { return splat.StaleInt3(s.Lines) })
}
