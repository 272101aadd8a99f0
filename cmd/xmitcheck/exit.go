package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/xmitcheck/xmitcheck/vmtest"
)

// Exit codes, stable for CI systems and `git bisect run`.
const (
	exitOK      = 0 // every test passed (or skipped with a reason)
	exitFail    = 1 // a test failed
	exitInfra   = 2 // bad usage or the run could not start
	exitCrashed = 3 // a kernel panicked, hung or missed a deadline
)

// usageError is bad input from the user.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// fail prints err as one line and returns the exit code it maps to.
func fail(err error) int {
	fmt.Fprintln(os.Stderr, "xmitcheck:", err)
	if errors.Is(err, vmtest.ErrCrash) {
		return exitCrashed
	}
	return exitInfra
}
