package devmap

import (
	"fmt"
	"strconv"
	"strings"
)

// The notation of recorded sequences, one token per event or per run of
// events on consecutive frames:
//
//	M3>0          frame 3's main program run, redirected to key 0
//	M0-16>0       frames 0 to 16's, all to key 0
//	D0-15@10/A    devmap program A on frames 0 to 15, egress ifindex 10
//	F16@10        a flush of 16 frames to ifindex 10
//
// format writes a sequence so; parseEvents reads it back.
func format(evs []event) string {
	var toks []string
	for i := 0; i < len(evs); {
		e := evs[i]
		// next is the event at j that continues e's run: its kind, device
		// and program on the following frame.
		next := func(j int) event {
			return event{kind: e.kind, frame: e.frame + uint32(j-i), dev: e.dev, prog: e.prog}
		}
		j := i + 1
		for e.kind != 'F' && j < len(evs) && evs[j] == next(j) {
			j++
		}
		frames := strconv.Itoa(int(e.frame))
		if j-i > 1 {
			frames += "-" + strconv.Itoa(int(evs[j-1].frame))
		}
		switch e.kind {
		case 'M':
			toks = append(toks, fmt.Sprintf("M%s>%d", frames, e.dev))
		case 'D':
			toks = append(toks, fmt.Sprintf("D%s@%d/%s", frames, e.dev, progName(e.prog)))
		default:
			toks = append(toks, fmt.Sprintf("F%d@%d", e.size, e.dev))
		}
		i = j
	}
	return strings.Join(toks, " ")
}

// parseEvents reads the notation of format.
func parseEvents(s string) ([]event, error) {
	tags := map[string]uint32{}
	for tag := uint32(1); tag <= progPad; tag++ {
		tags[progName(tag)] = tag
	}
	var out []event
	for _, tok := range strings.Fields(s) {
		kind, rest := tok[0], tok[1:]
		var frames, dev, prog string
		var ok bool
		switch kind {
		case 'M':
			frames, dev, ok = strings.Cut(rest, ">")
		case 'D':
			frames, rest, ok = strings.Cut(rest, "@")
			dev, prog, _ = strings.Cut(rest, "/")
		case 'F':
			frames, dev, ok = strings.Cut(rest, "@")
		}
		first, last, isRange := strings.Cut(frames, "-")
		if !isRange {
			last = first
		}
		lo, err1 := strconv.Atoi(first)
		hi, err2 := strconv.Atoi(last)
		d, err3 := strconv.Atoi(dev)
		tag, known := tags[prog]
		if !ok || err1 != nil || err2 != nil || err3 != nil || kind == 'D' && !known || kind == 'F' && isRange {
			return nil, fmt.Errorf("token %q: want M3>0, M0-16>0, D0-15@10/A or F16@10", tok)
		}
		if kind == 'F' {
			out = append(out, event{kind: 'F', dev: uint32(d), size: uint32(lo)})
			continue
		}
		for f := lo; f <= hi; f++ {
			out = append(out, event{kind: kind, frame: uint32(f), dev: uint32(d), prog: tag})
		}
	}
	return out, nil
}
