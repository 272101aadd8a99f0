package tunwake

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// Owners runs bpf/owner.c on one tap, of any number of queues.
type Owners struct {
	probes
	objs ownerObjects
}

// TraceOwners attaches bpf/owner.c to the tap ifindex of the namespace ns
// (a namespace file descriptor) until tb ends; a tracer that cannot load
// is an environment fault, one that missed events an instrument fault.
func TraceOwners(tb testing.TB, ns, ifindex int) *Owners {
	tb.Helper()
	return trace(tb, func() (*Owners, error) { return AttachOwners(ns, ifindex) })
}

// AttachOwners loads and attaches bpf/owner.c for the tap ifindex of the
// namespace ns (a namespace file descriptor).
func AttachOwners(ns, ifindex int) (*Owners, error) {
	o := &Owners{}
	err := o.attach(program{
		file: "bpf/owner.c", load: loadOwner,
		offsets: map[string][]string{
			ownerVarDevOff:    {"tun_struct", "dev"},
			ownerVarTfilesOff: {"tun_struct", "tfiles"},
			ownerVarIndexOff:  {"tun_file", "queue_index"},
		},
		needs: "kprobes on tun's __tun_wake_queue and netif_tx_wake_queue; needs BTF",
	}, ns, ifindex, &o.objs, func() []instrument.Probe {
		return []instrument.Probe{
			{Func: "__tun_wake_queue", Prog: o.objs.OwnerEntry},
			{Func: "__tun_wake_queue", Prog: o.objs.OwnerExit, Return: true},
			{Func: "netif_tx_wake_queue", Prog: o.objs.OwnerWake},
		}
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// Counts reads the tally so far.
func (o *Owners) Counts() (OwnerCalls, error) {
	c, err := instrument.SumCPUs[ownerOwnerCounts](o.objs.OwnerCounts)
	if err != nil {
		return OwnerCalls{}, fmt.Errorf("read the owner counters: %w", err)
	}
	return OwnerCalls{Calls: c.Calls, Stale: c.Stale, Woke: c.Woke, Lost: c.Lost}, nil
}

// CheckOwners holds the kernel to the owner check: no wake inside a call
// of __tun_wake_queue() for a tun_file that did not own its slot. minCalls
// is how many calls the test's consumers made at least (one per frame a
// read(2) takes, one per vhost-net batch): a tracer that saw fewer is blind
// where the kernel calls it (an inlined copy), and one that lost a stale
// call missed what it judges; both are instrument faults.
func CheckOwners(t *testing.T, o *Owners, minCalls uint64) OwnerCalls {
	t.Helper()
	c, err := o.Counts()
	assert.NilError(t, err)
	t.Logf("owner check: %v (the consumers made at least %d calls)", c, minCalls)
	lost, err := o.losses.Since()
	n, named := instrument.Sum(lost)
	switch {
	case err != nil:
		observe.Lost(t, "bpf/owner.c: %v", err)
	case n > 0:
		// A missed exit leaves a task marked inside a stale call, a missed
		// wake is one not seen: the tally proves nothing either way.
		observe.Lost(t, "bpf/owner.c missed %d events (%s); %v", n, named, c)
	case c.Lost > 0:
		observe.Lost(t, "bpf/owner.c lost %d calls: %v", c.Lost, c)
	case c.Calls < minCalls:
		observe.Lost(t, "bpf/owner.c saw %d calls of __tun_wake_queue(), the consumers made at least %d", c.Calls, minCalls)
	case c.Woke > 0:
		t.Errorf("%d wakes of a subqueue by a consumer of a queue file that no longer owned its slot: %v", c.Woke, c)
	}
	return c
}

// Void reports why o cannot judge this run: it missed events
// (instrument.Losses). A test that may run again logs it and tries anew;
// CheckOwners judges the last try, losses and all (and reports an error
// reading them).
func (o *Owners) Void() (why string, void bool) {
	lost, err := o.losses.Since()
	if err != nil || len(lost) == 0 {
		return "", false
	}
	n, named := instrument.Sum(lost)
	return fmt.Sprintf("bpf/owner.c missed %d events (%s)", n, named), true
}
