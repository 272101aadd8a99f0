package vmtest

import (
	"slices"

	"github.com/xmitcheck/xmitcheck/internal/splat"
)

// Artefact reports whether a boot under TCG died of the one failure that is
// the emulator's, not the kernel's: under multi-threaded TCG a vCPU can run
// text another vCPU has just live-patched and trap on an int3 that is no
// longer there (splat.StaleInt3). KVM runs no stale text.
func Artefact(out *Outcome, splats []Splat) bool {
	if out == nil || out.Accel != "tcg" {
		return false
	}
	stale := func(s Splat) bool { return splat.StaleInt3(s.Lines) }
	return splat.StaleInt3(out.Console) || slices.ContainsFunc(splats, stale)
}
