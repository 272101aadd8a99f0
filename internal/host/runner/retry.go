package runner

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

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
// Each try goes on from where the last one was: the top-level tests a
// killed try had finished keep their results and the next try skips them
// (results.Run.Resume), so an artefact late in a long binary costs the
// test it hit, not the binary again. An artefact while no binary ran (the
// boot, or the time between two binaries) is charged to the binary that
// was to run next. Tests that had already failed before the artefact stay
// failed.
type emulatorRetry struct {
	run   *results.Run
	label string
	tries map[string]int
	// args are each binary's arguments before a try skipped anything.
	args map[string][]string
}

func newEmulatorRetry(run *results.Run, label string) *emulatorRetry {
	return &emulatorRetry{run: run, label: label, tries: map[string]int{}, args: map[string][]string{}}
}

// after takes a boot that died of the artefact with left its binaries not
// run to their end, the one it hit first (ran reports whether that one had
// started). It readies the run and returns the boots to run next; err is
// set when the binary goes no more.
func (r *emulatorRetry) after(left []vmtest.Binary, ran bool) (next []boot, err error) {
	left = slices.Clone(left)
	hit, rest := left[0], left[1:]
	r.tries[hit.Name]++
	where, from := "the boot, before "+hit.Name, ""
	if ran {
		where = hit.Name
	}
	if r.tries[hit.Name] > 2 {
		r.run.Note(fmt.Sprintf("%s: the TCG int3 artefact a third time in %s: its unfinished tests count as not tested",
			r.label, where))
		r.run.MarkArtefact(hit.Name)
		return boots(rest), fmt.Errorf("%s could not be tested: %w three times (docs/verdicts.md); try --accel kvm",
			hit.Name, ErrStaleText)
	}
	if ran {
		if _, ok := r.args[hit.Name]; !ok {
			r.args[hit.Name] = hit.Args
		}
		if done := r.run.Resume(hit.Name); len(done) > 0 {
			from = fmt.Sprintf(" (its %s stand and are skipped)", results.Count(len(done), "finished test"))
			left[0] = skipping(hit, r.args[hit.Name], done)
		}
	}
	if r.tries[hit.Name] == 1 {
		r.run.Note(fmt.Sprintf("%s: int3 at a live-patched site under TCG in %s (the emulator's): again as before%s",
			r.label, where, from))
		return []boot{{bins: left}}, nil
	}
	r.run.Note(fmt.Sprintf("%s: the TCG int3 artefact again in %s: %s alone single-threaded%s",
		r.label, where, hit.Name, from))
	return append([]boot{{bins: left[:1], single: true}}, boots(rest)...), nil
}

// skipping is bin with args, told to skip the top-level tests done too:
// go test's -skip is an alternation of patterns, so ours joins any the
// caller gave.
func skipping(bin vmtest.Binary, args, done []string) vmtest.Binary {
	quoted := make([]string, len(done))
	for i, name := range done {
		quoted[i] = regexp.QuoteMeta(name)
	}
	re := "^(?:" + strings.Join(quoted, "|") + ")$"
	bin.Args = slices.Clone(args)
	if i := slices.IndexFunc(bin.Args, func(a string) bool { return strings.HasPrefix(a, "-test.skip=") }); i >= 0 {
		bin.Args[i] += "|" + re
	} else {
		bin.Args = append(bin.Args, "-test.skip="+re)
	}
	return bin
}

// ErrStaleText is the emulator's artefact, once it left a binary untested.
var ErrStaleText = errors.New("TCG ran stale code")

// boots is one boot for bins, or none.
func boots(bins []vmtest.Binary) []boot {
	if len(bins) == 0 {
		return nil
	}
	return []boot{{bins: bins}}
}
