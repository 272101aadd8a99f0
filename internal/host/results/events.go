package results

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// WriteEvents writes every event the runs took, as the guests sent them
// (before any judging), one JSON object per line, each with its kernel
// and, in a soak, its round: what ReadEvents reads back to judge a run
// again.
func WriteEvents(w io.Writer, runs []*Run) error {
	enc := json.NewEncoder(w)
	for _, r := range runs {
		for _, e := range r.events {
			e.Kernel, e.Round = r.Kernel, r.Round
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadEvents reads what WriteEvents wrote: one unjudged Run per kernel and
// round, in the order they first appear. A package that starts again is a try after
// one the emulator ended, as the run took it (Run.Resume).
func ReadEvents(rd io.Reader) ([]*Run, error) {
	var runs []*Run
	type id struct {
		kernel string
		round  int
	}
	by := map[id]*Run{}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		r := by[id{e.Kernel, e.Round}]
		if r == nil {
			r = NewRun(e.Kernel)
			r.Round = e.Round
			by[id{e.Kernel, e.Round}] = r
			runs = append(runs, r)
		}
		if e.Action == "start" && e.Test == "" && r.byName[key(e.Package, "")] != nil {
			// The binary again: the emulator ended its last try, and
			// the run went on as Resume says.
			r.Resume(e.Package)
		}
		r.Add(e)
	}
	return runs, sc.Err()
}
