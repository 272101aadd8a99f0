package splat

import (
	"regexp"
	"strings"
)

var (
	int3Oops = regexp.MustCompile(`(^|\] )(Oops: )?int3: `)
	// codeLine is the oops's "Code:" dump, the byte at the faulting
	// address in angle brackets.
	codeLine = regexp.MustCompile(`Code: (?:[0-9a-f]{2} )*([0-9a-f]{2}) <[0-9a-f]{2}>`)
)

// StaleInt3 reports whether a report is an int3 trap at an address whose
// preceding byte is no longer an int3 (0xcc): the CPU ran a breakpoint that
// live patching (static keys, static calls, ftrace: text_poke_bp) had
// already taken out. On hardware the int3 handler emulates such a hit while
// the patch is in flight; a stale hit after it can only come from an
// emulator that ran old code, as multi-threaded TCG can when one vCPU
// patches text another executes. Under TCG such a report is the
// emulator's, not the kernel's.
func StaleInt3(lines []string) bool {
	oops := false
	for _, l := range lines {
		if int3Oops.MatchString(l) {
			oops = true
		}
		if m := codeLine.FindStringSubmatch(l); oops && m != nil {
			return !strings.EqualFold(m[1], "cc")
		}
	}
	return false
}
