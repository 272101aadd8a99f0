package feature

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Margin is how close one call site's time-bounded waits came to their
// limit in one test binary. The guest's internal/guest/margin notes them and
// prints them as one MarginsLine when the binary ends; the host reads them
// back with ParseMargins.
type Margin struct {
	// Site is "suite/file.go:line", the first caller outside the waiting
	// helpers.
	Site string `json:"site"`
	// Limit is the site's bound (the largest, if it varies).
	Limit time.Duration `json:"limit"`
	// Worst is the longest wait that ended within its limit.
	Worst time.Duration `json:"worst"`
	// N waits ended within their limit, Timeouts did not.
	N        int `json:"n"`
	Timeouts int `json:"timeouts,omitempty"`
}

// Left is the share of the limit the worst wait left unused, 0 to 1.
func (m Margin) Left() float64 {
	if m.Limit <= 0 {
		return 0
	}
	return 1 - float64(m.Worst)/float64(m.Limit)
}

func (m Margin) String() string {
	t := ""
	if m.Timeouts > 0 {
		t = fmt.Sprintf(", %d timed out", m.Timeouts)
	}
	return fmt.Sprintf("%s: worst %v of %v (%.0f%% left), %d waits%s",
		m.Site, m.Worst.Round(time.Millisecond), m.Limit, 100*m.Left(), m.N, t)
}

// marginsPrefix starts the line MarginsLine prints.
const marginsPrefix = recordPrefix + `{"margins":`

type marginsLine struct {
	Margins []Margin `json:"margins"`
}

// MarginsLine is ms as one line of a test binary's output.
func MarginsLine(ms []Margin) string {
	b, err := json.Marshal(marginsLine{ms})
	if err != nil {
		panic(err) // strings and numbers only
	}
	return recordPrefix + string(b)
}

// ParseMargins reads a MarginsLine back from a line of a test binary's
// output.
func ParseMargins(line string) ([]Margin, bool) {
	i := strings.Index(line, marginsPrefix)
	if i < 0 {
		return nil, false
	}
	var v marginsLine
	if json.Unmarshal([]byte(line[i+len(recordPrefix):]), &v) != nil {
		return nil, false
	}
	return v.Margins, true
}
