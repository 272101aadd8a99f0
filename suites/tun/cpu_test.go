package tun

import (
	"github.com/xmitcheck/xmitcheck/internal/guest/cpus"
)

// placement is where BenchmarkTap's threads run: the reader on a CPU of its
// own and the senders round the others, as the seed's measurement isolated
// its threads, so that no run depends on where the scheduler puts them. A
// CPU of -1 leaves the thread anywhere: with one CPU allowed, everything
// shares it.
type placement struct {
	reader  int
	senders []int
}

// place puts the reader on the last CPU the process may use and the
// senders on the others in turn.
func place(senders int) (placement, error) {
	all, err := cpus.Allowed()
	if err != nil {
		return placement{}, err
	}
	p := placement{reader: -1, senders: make([]int, senders)}
	for i := range p.senders {
		p.senders[i] = -1
		if len(all) > 1 {
			p.reader, p.senders[i] = all[len(all)-1], all[i%(len(all)-1)]
		}
	}
	return p, nil
}
