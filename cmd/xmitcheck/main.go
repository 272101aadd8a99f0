// Command xmitcheck runs the transmit-path validation suites on real kernels:
// it fetches Debian's kernels (or takes yours), boots each in qemu, runs the
// suites' test binaries inside and reports per kernel in text, KTAP, JSON
// and JUnit.
//
// When it runs as PID 1 it is the guest init of a native VM; with
// XMITCHECK_GUEST_SPEC set it is the guest runner inside virtme-ng.
package main

import (
	"os"

	"github.com/xmitcheck/xmitcheck/vmtest/guest"
)

func main() {
	if os.Getpid() == 1 || os.Getenv(guest.EnvSpec) != "" {
		guest.Main()
		return
	}
	os.Exit(run(os.Args[1:]))
}
