// Command xmitcheck runs the transmit-path validation suites on real kernels.
//
// When it runs as PID 1 it is the guest init of a native VM.
package main

import (
	"os"

	"github.com/xmitcheck/xmitcheck/vmtest/guest"
)

func main() {
	if os.Getpid() == 1 {
		guest.Main()
		return
	}
	os.Exit(run(os.Args[1:]))
}
