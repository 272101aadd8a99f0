// Package feature is the contract between the two programs of xmitcheck:
// the suites in the guest and the judge on the host. It names the seeds the
// suites validate, the features they probe and the known kernel issues they
// may see (names.go); the Record a test prints to say what it observed and
// the Margin lines of its waits; and the one "not supported" error a probe
// returns. It imports neither side, nor package testing: the guest writes
// records through internal/guest/observe, the host reads them in
// internal/host/results.
package feature

import (
	"errors"
	"fmt"
)

// ErrNotSupported is matched by every error that means "this kernel does not
// have the feature".
var ErrNotSupported = errors.New("not supported")

// UnsupportedError says which feature a probe found missing and how.
type UnsupportedError struct {
	Feature Feature
	// Probe says how the absence was observed, e.g. "TUNGETFEATURES=0x7173 lacks 0x80".
	Probe string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("kernel lacks %s (%s)", e.Feature, e.Probe)
}

// Is makes UnsupportedError match ErrNotSupported.
func (e *UnsupportedError) Is(target error) bool { return target == ErrNotSupported }

// Unsupported returns an *UnsupportedError.
func Unsupported(f Feature, probe string, args ...any) error {
	return &UnsupportedError{Feature: f, Probe: fmt.Sprintf(probe, args...)}
}
