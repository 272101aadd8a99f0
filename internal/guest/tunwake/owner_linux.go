package tunwake

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// Owners runs bpf/owner.c on one tap, of any number of queues.
type Owners struct {
	objs   ownerObjects
	links  map[string]link.Link
	losses *instrument.Losses
}

// TraceOwners attaches bpf/owner.c to the tap ifindex of the namespace ns
// (a namespace file descriptor) until tb ends; a tracer that cannot load
// is an environment fault, one that missed events an instrument fault.
func TraceOwners(tb testing.TB, ns, ifindex int) *Owners {
	tb.Helper()
	o, err := AttachOwners(ns, ifindex)
	if err != nil {
		observe.Fault(tb, instrument.Cause(err), "%v", err)
	}
	tb.Cleanup(func() { o.Close() })
	return o
}

// AttachOwners loads and attaches bpf/owner.c for the tap ifindex of the
// namespace ns (a namespace file descriptor).
func AttachOwners(ns, ifindex int) (*Owners, error) {
	defer profile.Running(profile.Setup).End()
	spec, err := instrument.Spec("bpf/owner.c", loadOwner)
	if err != nil {
		return nil, err
	}
	err = setTap(spec, "bpf/owner.c", ns, ifindex, map[string][]string{
		ownerVarDevOff:    {"tun_struct", "dev"},
		ownerVarTfilesOff: {"tun_struct", "tfiles"},
		ownerVarIndexOff:  {"tun_file", "queue_index"},
	})
	if err != nil {
		return nil, err
	}
	o := &Owners{}
	if err := spec.LoadAndAssign(&o.objs, instrument.LoadOptions()); err != nil {
		return nil, fmt.Errorf("load bpf/owner.c (kprobes on tun's __tun_wake_queue and netif_tx_wake_queue; "+
			"needs BTF): %w", err)
	}
	o.links, err = instrument.AttachProbes(
		instrument.Probe{Func: "__tun_wake_queue", Prog: o.objs.OwnerEntry},
		instrument.Probe{Func: "__tun_wake_queue", Prog: o.objs.OwnerExit, Return: true},
		instrument.Probe{Func: "netif_tx_wake_queue", Prog: o.objs.OwnerWake})
	if err == nil {
		o.losses, err = instrument.NewLosses(o.programs(), o.links)
	}
	if err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

func (o *Owners) programs() []*ebpf.Program {
	return []*ebpf.Program{o.objs.OwnerEntry, o.objs.OwnerExit, o.objs.OwnerWake}
}

// Counts reads the tally so far.
func (o *Owners) Counts() (OwnerCalls, error) {
	var per []ownerOwnerCounts
	if err := o.objs.OwnerCounts.Lookup(uint32(0), &per); err != nil {
		return OwnerCalls{}, fmt.Errorf("read the owner counters: %w", err)
	}
	var sum OwnerCalls
	for _, c := range per {
		sum.Calls += c.Calls
		sum.Stale += c.Stale
		sum.Woke += c.Woke
		sum.Lost += c.Lost
	}
	return sum, nil
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

// Close detaches and unloads the programs.
func (o *Owners) Close() error {
	var errs []error
	for _, l := range o.links {
		errs = append(errs, l.Close())
	}
	return errors.Join(append(errs, o.objs.Close())...)
}
