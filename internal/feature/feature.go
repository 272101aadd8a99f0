// Package feature holds the one "not supported" error of xmitcheck and the
// rule that turns a failed probe into a skip: a probe decides, the skip names
// the probe, and a kernel that the project expects to have the feature fails
// instead of skipping, so a skip can never hide a regression.
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
	// Feature names what was probed, e.g. "IFF_BACKPRESSURE".
	Feature string
	// Probe says how the absence was observed, e.g. "TUNGETFEATURES=0x7173 lacks 0x80".
	Probe string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("kernel lacks %s (%s)", e.Feature, e.Probe)
}

// Is makes UnsupportedError match ErrNotSupported.
func (e *UnsupportedError) Is(target error) bool { return target == ErrNotSupported }

// Unsupported returns an *UnsupportedError.
func Unsupported(feature, probe string, args ...any) error {
	return &UnsupportedError{Feature: feature, Probe: fmt.Sprintf(probe, args...)}
}
