package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/xmitcheck/xmitcheck/internal/host/runner"
)

// checkoutUsage is what -C says of itself.
const checkoutUsage = "the xmitcheck checkout whose suites to compile, PKG paths relative to it " +
	"(default: the checkout the current directory is in, else the suites built into xmitcheck)"

const suitesAbout = `The suites' test binaries, without booting anything:
  xmitcheck suites build -o DIR [-C CHECKOUT] [PKG...]     compile them (static, go test -c) into DIR
  xmitcheck suites install -o DIR [flags] [PKG...]         a kselftest collection for the kernel's runner`

// cmdSuites is `xmitcheck suites build`: what run compiles, written to a
// directory (to copy to a machine without Go, or to check that the suites
// compile from wherever xmitcheck runs); and `suites install`, the same
// as a kselftest collection (install.go).
func cmdSuites(args []string) error {
	if len(args) > 0 && args[0] == "install" {
		return cmdInstall(args[1:])
	}
	if len(args) == 0 || args[0] != "build" {
		if err := usageOnly("suites", "build|install -o DIR [PKG...]", suitesAbout, args); err != nil {
			return err
		}
		return usagef("suites: use suites build -o DIR [PKG...] or suites install -o DIR (xmitcheck suites -h)")
	}
	fs := newFlags("suites build", "-o DIR [-C CHECKOUT] [PKG...]",
		"Compile the suites' test binaries (default ./suites/...), static as run boots them, into DIR,\n"+
			"and print each package and binary.")
	out := fs.String("o", "", "directory for the test binaries (created)")
	c := fs.String("C", "", checkoutUsage)
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if *out == "" {
		return usagef("suites build: give -o DIR")
	}
	pkgs := fs.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./suites/..."}
	}
	dir, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	src, err := runner.FindSuites(ctx, *c)
	if err != nil {
		return err
	}
	bins, err := runner.BuildTests(ctx, src, dir, pkgs, nil)
	if err != nil {
		return err
	}
	for _, b := range bins {
		fmt.Printf("%s\t%s\n", b.Name, b.Path)
	}
	return nil
}
