package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// Exit codes, stable for CI systems and `git bisect run`.
const (
	exitOK      = 0 // every test passed (or skipped with a reason)
	exitFail    = 1 // a test failed
	exitInfra   = 2 // bad usage or the run could not start
	exitCrashed = 3 // a kernel panicked, hung or missed a deadline
)

// usagef is bad input from the user (runner.UsageError).
func usagef(format string, args ...any) error { return runner.Usagef(format, args...) }

// fail prints err as one line, with what to do when a file system refused
// a write, and returns the exit code it maps to.
func fail(err error) int {
	fmt.Fprintln(os.Stderr, "xmitcheck:", err.Error()+diskAdvice(err))
	if errors.Is(err, vmtest.ErrCrash) {
		return exitCrashed
	}
	return exitInfra
}

// diskAdvice says what to do about err when it is a full disk, or a cache
// xmitcheck cannot write; "" for any other error.
func diskAdvice(err error) string {
	msg := err.Error()
	cache, cerr := kernels.DefaultCacheDir()
	if cerr == nil {
		cache = filepath.Dir(cache)
	}
	switch {
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || strings.Contains(msg, "No space left"):
		return fmt.Sprintf(": the disk is full: free space on it, or set XDG_CACHE_HOME (the cache, now %s) "+
			"and TMPDIR to directories on another", cache)
	case cerr == nil && strings.Contains(msg, cache) &&
		(errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)):
		return fmt.Sprintf(": the cache %s is not writable: set XDG_CACHE_HOME to a directory you can write", cache)
	}
	return ""
}
