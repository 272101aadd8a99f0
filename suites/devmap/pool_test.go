package devmap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/testmain"
)

// A rig costs, under the emulator, 0.2 to 0.3 s to build and delete (four
// veth pairs brought up, XDP attached to five devices, one batch of
// RTM_DELLINK), and the tests build one per driver and case: 70 of them. A
// test that passed leaves its rig as it found it but for the maps, which
// begin resets: so the rig, with its driver on it, waits for the next test
// of the same driver, each driver's in a namespace of its own. A rig goes
// instead, and the next test of its driver builds a new one, when its test
// failed, or skipped before the driver was on, or changed it (keepable says
// how), or when frames still move on it. A test that skips once the driver
// is on (an expected failure, which is judged last) leaves its rig.
//
// A kept rig is idle: nothing in its namespace sends (no addresses, IPv6
// off), so its programs, attached to its devices, do not run while another
// rig's test reads the shared maps.

// keptRigs are the drivers' namespaces and the rig each keeps, by driver.
var keptRigs = map[string]*rigSlot{}

type rigSlot struct {
	env *netenv.Env
	r   *rig
}

// linkXDP is a device of a rig and the XDP program attached to it.
type linkXDP struct {
	name        string
	index, prog int
	mode        uint32
}

// rigFor returns a rig with dv on it for t: the rig the last test of dv
// left, readied for t (begin), or a new one, always traced. As t ends the
// rig is kept for the next test of dv, or goes.
func rigFor(t *testing.T, dv driverSpec) (*rig, driver) {
	t.Helper()
	slot, err := slotFor(dv.name)
	if err != nil {
		observe.Fault(t, feature.Environment, "devmap: a namespace for %s's rigs: %v", dv.name, err)
	}
	release := func(r *rig) {
		if err := r.keepable(t); err != nil {
			// A skipped test's last words are its reason: only a test
			// that passed says why its rig goes.
			if !t.Failed() && !t.Skipped() {
				t.Logf("the rig goes, not kept for the next test: %v", err)
			}
			r.closeFor(t)
			return
		}
		slot.r = r
	}
	if r := slot.r; r != nil {
		slot.r = nil
		t.Cleanup(func() { release(r) })
		r.begin(t)
		return r, r.drv
	}
	r := buildRig(t, slot.env, true, release)
	r.drv = dv.new(t, r)
	if r.built, err = r.devices(); err != nil {
		observe.Fault(t, feature.Harness, "devmap: %v", err)
	}
	return r, r.drv
}

// slotFor returns driver name's slot, its namespace made at the first call.
func slotFor(name string) (*rigSlot, error) {
	if s := keptRigs[name]; s != nil {
		return s, nil
	}
	env, closeEnv, err := netenv.Shared()
	if err != nil {
		return nil, err
	}
	s := &rigSlot{env: env}
	keptRigs[name] = s
	testmain.AtEnd(func() error {
		var err error
		if s.r != nil {
			err = s.r.close()
		}
		return errors.Join(err, closeEnv())
	})
	return s, nil
}

// devices lists the devices of the rig's namespace with their XDP programs.
func (r *rig) devices() ([]linkXDP, error) {
	ls, err := r.env.Handle.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list the rig's devices: %w", err)
	}
	out := make([]linkXDP, 0, len(ls))
	for _, l := range ls {
		a := l.Attrs()
		d := linkXDP{name: a.Name, index: a.Index}
		if a.Xdp != nil && a.Xdp.Attached {
			d.prog, d.mode = int(a.Xdp.ProgId), a.Xdp.AttachMode
		}
		out = append(out, d)
	}
	return out, nil
}

// keptWindow is how long the rig's counters must stay still for it to be
// kept: a frame still on its way moves them as soon as a softirq or the
// NAPI thread runs, well inside it.
const keptWindow = 20 * time.Millisecond

// keepable returns why the rig cannot serve the next test as t leaves it,
// nil when it can: t did not fail, the rig has the devices and XDP programs it
// was built with, and nothing moves on it.
func (r *rig) keepable(t *testing.T) error {
	switch {
	case t.Failed():
		return errors.New("its test failed")
	case r.drv == nil:
		return errors.New("no driver on it: its test skipped or failed before")
	}
	now, err := r.devices()
	if err != nil {
		return err
	}
	if !slices.Equal(now, r.built) {
		return fmt.Errorf("its test changed its devices or their XDP programs: %v, built with %v", now, r.built)
	}
	// Read without failing t (the rig's received and state helpers would):
	// keepable runs in t's cleanup, and a read that fails only means the
	// rig goes.
	moved := func() (quiet, error) {
		q := quiet{}
		if err := r.objs.State.Lookup(uint32(0), &q.state); err != nil {
			return q, err
		}
		for _, l := range r.sinks() {
			var n uint64
			if err := r.objs.Received.Lookup(ifindex(l), &n); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return q, err
			}
			q.received += n
		}
		return q, nil
	}
	if _, err := counters.WaitSteady(context.Background(), time.Second, keptWindow, moved); err != nil {
		return fmt.Errorf("frames still move on it: %w", err)
	}
	return nil
}

// quiet is what keepable holds still: the programs' state and the frames
// the sinks counted.
type quiet struct {
	state    bpfState
	received uint64
}
