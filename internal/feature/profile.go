package feature

import (
	"encoding/json"
	"strings"
	"time"
)

// Profile is where one test's own time went, by what the shared helpers
// were doing (internal/guest/profile): its subtests' time is in their own
// profiles, not in it. The guest prints it as one ProfileLine when the test
// ends; the host reads it back with ParseProfile and sums a test's tree.
type Profile struct {
	// Setup: namespaces, links, qdiscs, taps, BPF objects loaded.
	Setup time.Duration `json:"setup,omitempty"`
	// Traffic: frames sent and read.
	Traffic time.Duration `json:"traffic,omitempty"`
	// Waits: bounded waits for the kernel to reach or keep a state.
	Waits time.Duration `json:"waits,omitempty"`
	// Teardown: from the test's end to the end of its last cleanup.
	Teardown time.Duration `json:"teardown,omitempty"`
}

// Add is p plus q, field by field.
func (p Profile) Add(q Profile) Profile {
	return Profile{p.Setup + q.Setup, p.Traffic + q.Traffic, p.Waits + q.Waits, p.Teardown + q.Teardown}
}

// Sum is the time p accounts for.
func (p Profile) Sum() time.Duration { return p.Setup + p.Traffic + p.Waits + p.Teardown }

// profilePrefix starts the line ProfileLine prints.
const profilePrefix = recordPrefix + `{"profile":`

type profileLine struct {
	Profile Profile `json:"profile"`
}

// ProfileLine is p as one line of a test's log.
func ProfileLine(p Profile) string {
	b, err := json.Marshal(profileLine{p})
	if err != nil {
		panic(err) // numbers only
	}
	return recordPrefix + string(b)
}

// ParseProfile reads a ProfileLine back from a line of a test's output
// (after go test's "file.go:N: " prefix).
func ParseProfile(line string) (Profile, bool) {
	i := strings.Index(line, profilePrefix)
	if i < 0 {
		return Profile{}, false
	}
	var v profileLine
	if json.Unmarshal([]byte(line[i+len(recordPrefix):]), &v) != nil {
		return Profile{}, false
	}
	return v.Profile, true
}

// IsProtocolLine reports whether l is a line a test binary prints only for
// the host, never for a reader: the margins line or a profile line.
func IsProtocolLine(l string) bool {
	return strings.Contains(l, marginsPrefix) || strings.Contains(l, profilePrefix)
}
