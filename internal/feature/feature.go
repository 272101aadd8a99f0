// Package feature holds what a kernel has and what the project expects of
// it: the features suites probe, the seeds they validate, the known issues
// they tolerate, and the one "not supported" error. Tests report through it
// (Of, Require, Absent, Known) in records the runner reads back to give one
// verdict per seed; a probe decides a skip and names itself, and a kernel
// expected to have the feature fails instead, so a skip can never hide a
// regression.
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
