package main

import (
	"errors"
	"fmt"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// boot is one boot of a kernel: the binaries it runs, in order, and whether
// TCG runs them one vCPU at a time.
type boot struct {
	bins   []vmtest.Binary
	single bool
}

// emulatorRetry owns the runner's answer to the one failure that is the
// emulator's (vmtest.Artefact): how often each binary met it, how the
// next boots run, and what the run keeps of the tries it ended.
//
//   - The first time, the binary runs again as before: the artefact is
//     rare, and single-threaded TCG takes away the parallel CPUs a race
//     test needs (seed 003's fast path is seen only under contention).
//   - The second time, it runs alone under single-threaded TCG, which
//     cannot run stale text; the binaries after it boot as before.
//   - The third time, its unfinished tests count as not tested.
//
// An artefact while no binary ran (the boot, or the time between two
// binaries) is charged to the binary that was to run next. Tests that had
// already failed before the artefact stay failed (results.Run.Rerun).
type emulatorRetry struct {
	run   *results.Run
	label string
	tries map[string]int
}

func newEmulatorRetry(run *results.Run, label string) *emulatorRetry {
	return &emulatorRetry{run: run, label: label, tries: map[string]int{}}
}

// after takes a boot that died of the artefact with left its binaries not
// run to their end, the one it hit first (ran reports whether that one had
// started). It readies the run and returns the boots to run next; err is
// set when the binary goes no more.
func (r *emulatorRetry) after(left []vmtest.Binary, ran bool) (next []boot, err error) {
	hit, rest := left[0], left[1:]
	r.tries[hit.Name]++
	where := "the boot, before " + hit.Name
	if ran {
		where = hit.Name
		r.run.Rerun(hit.Name)
	}
	switch r.tries[hit.Name] {
	case 1:
		r.run.Note(fmt.Sprintf("%s: int3 at a live-patched site under TCG in %s (the emulator's): again as before",
			r.label, where))
		return []boot{{bins: left}}, nil
	case 2:
		r.run.Note(fmt.Sprintf("%s: the TCG int3 artefact again in %s: %s alone single-threaded", r.label, where, hit.Name))
		return append([]boot{{bins: left[:1], single: true}}, boots(rest)...), nil
	}
	r.run.Note(fmt.Sprintf("%s: the TCG int3 artefact a third time in %s: its tests count as not tested", r.label, where))
	r.run.MarkArtefact(hit.Name)
	return boots(rest), fmt.Errorf("%s could not be tested: %w three times (docs/verdicts.md); try --accel kvm",
		hit.Name, errStaleText)
}

// errStaleText is the emulator's artefact, once it left a binary untested.
var errStaleText = errors.New("TCG ran stale code")

// boots is one boot for bins, or none.
func boots(bins []vmtest.Binary) []boot {
	if len(bins) == 0 {
		return nil
	}
	return []boot{{bins: bins}}
}
