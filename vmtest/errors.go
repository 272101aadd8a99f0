package vmtest

import "errors"

// ErrCrash is wrapped by every error that means the kernel panicked, hung,
// or missed a deadline. The CLI maps it to exit code 3.
var ErrCrash = errors.New("kernel crashed or hung")
