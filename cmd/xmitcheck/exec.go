package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// cmdExec runs one test binary on one kernel and passes its output and exit
// code through, so that `go test -exec 'xmitcheck exec --kernel K'` works.
func cmdExec(args []string) (int, error) {
	fs := newFlags("exec", "[flags] BINARY [ARGS...]",
		"Run one test binary in a VM and pass its output and exit code through:\n"+
			"  go test -exec 'xmitcheck exec --kernel debian:7.3' ./suites/tun")
	var o runner.Options
	registerVM(fs, &o)
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	var path string
	ctx, stop, ks, err := begin(&o, func() (err error) {
		if o.Expect != "" {
			return usagef("exec: --expect is for run, matrix, compare and bisect: " +
				"exec passes the binary's own pass or fail through, unjudged")
		}
		if fs.NArg() == 0 {
			return usagef("exec: no binary given: use go test -exec 'xmitcheck exec --kernel %s' PKG", o.Kernels[0])
		}
		if len(o.Kernels) != 1 {
			return usagef("exec runs on exactly one kernel, got %d (%s)", len(o.Kernels), strings.Join(o.Kernels, ","))
		}
		path, err = filepath.Abs(fs.Arg(0))
		return err
	})
	defer stop()
	if err != nil {
		return 0, err
	}
	// go test runs the binary in its package's directory: the sources
	// there go into the guest too, where gotest.tools reads a failed
	// assertion's expression from them.
	wd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	srcs, err := filepath.Glob(filepath.Join(wd, "*.go"))
	if err != nil {
		return 0, err
	}
	bin := vmtest.Binary{Name: filepath.Base(path), Path: path, Args: fs.Args()[1:], Sources: srcs}
	return o.PassThrough(ctx, ks[0], bin)
}
