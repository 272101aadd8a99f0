package main

import (
	"fmt"

	"github.com/xmitcheck/xmitcheck/internal/host/runner"
)

// cmdVersion prints the module's version and the VCS revision the binary
// was built from, as debug.ReadBuildInfo knows them.
func cmdVersion(args []string) error {
	about := "Print xmitcheck's version, the revision it was built from and the Go that built it."
	if err := usageOnly("version", "", about, args); err != nil {
		return err
	}
	fmt.Println(runner.Version())
	fmt.Println("suites:", runner.EmbeddedRev(), "(built in; -C CHECKOUT, or running inside one, uses its own)")
	return nil
}
