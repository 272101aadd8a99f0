package main

import (
	"fmt"
	"runtime/debug"
)

// cmdVersion prints the module's version and the VCS revision the binary
// was built from, as debug.ReadBuildInfo knows them.
func cmdVersion(args []string) error {
	about := "Print xmitcheck's version, the revision it was built from and the Go that built it."
	if err := usageOnly("version", "", about, args); err != nil {
		return err
	}
	fmt.Println(version())
	fmt.Println("suites:", embeddedRev(), "(built in; -C CHECKOUT, or running inside one, uses its own)")
	return nil
}

// about is the note every run carries: xmitcheck's version and which
// source the suites were compiled from.
func about(suitesRev string) string {
	return version() + "; suites: " + suitesRev
}

func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "xmitcheck (no build information)"
	}
	v, rev, when, dirty := bi.Main.Version, "", "", ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	if rev == "" {
		rev = "unknown revision"
	}
	return fmt.Sprintf("xmitcheck %s (%s%s%s) %s", v, rev, when, dirty, bi.GoVersion)
}
