package vmtest

import "errors"

// ErrCrash is wrapped by every error that means the kernel panicked, hung,
// or missed a deadline. The CLI maps it to exit code 3.
var ErrCrash = errors.New("kernel crashed or hung")

// ErrNoBoot is wrapped, besides ErrCrash, when the kernel never reached
// the guest runner: it panicked, hung or stopped while booting. Bisection
// calls such a kernel untestable rather than bad.
var ErrNoBoot = errors.New("kernel did not boot")
