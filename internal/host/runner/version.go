package runner

import (
	"fmt"
	"runtime/debug"
)

// about is the note every run carries: xmitcheck's version and which
// source the suites were compiled from.
func about(suitesRev string) string {
	return Version() + "; suites: " + suitesRev
}

// Version is the module's version and the VCS revision the binary was
// built from, as debug.ReadBuildInfo knows them.
func Version() string {
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
