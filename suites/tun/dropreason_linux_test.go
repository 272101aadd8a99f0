package tun

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// fullRingReason returns the value of SKB_DROP_REASON_FULL_RING, tun's
// reason for a frame that found the ring full.
func fullRingReason() (uint32, error) { return dropReason("SKB_DROP_REASON_FULL_RING") }

// burstDropReason returns the value of SKB_DROP_REASON_QDISC_BURST_DROP:
// with q->defer_list (7.2+), __dev_xmit_skb() frees a frame before the
// qdisc when more than net.core.qdisc_max_burst wait on the list. The
// sender gets ENOBUFS but neither the qdisc nor the device counts it.
func burstDropReason() (uint32, error) { return dropReason("SKB_DROP_REASON_QDISC_BURST_DROP") }

// dropReason returns the value of the enum skb_drop_reason member name,
// read from the running kernel's BTF (the enum is renumbered between
// releases, so no constant is safe). A kernel without the enum or without
// that member gets a feature.Unsupported error named after the member.
func dropReason(name string) (uint32, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) {
			return 0, feature.Unsupported(name, "no kernel BTF: %v", err)
		}
		return 0, fmt.Errorf("load kernel BTF: %w", err)
	}
	var e *btf.Enum
	if err := spec.TypeByName("skb_drop_reason", &e); err != nil {
		if errors.Is(err, btf.ErrNotFound) {
			return 0, feature.Unsupported(name, "kernel BTF has no enum skb_drop_reason")
		}
		return 0, fmt.Errorf("kernel BTF enum skb_drop_reason: %w", err)
	}
	for _, v := range e.Values {
		if v.Name == name {
			return uint32(v.Value), nil
		}
	}
	return 0, feature.Unsupported(name, "kernel BTF enum skb_drop_reason has %d members, not this one", len(e.Values))
}

// dropWatch counts skb:kfree_skb by reason for one device while attached.
type dropWatch struct {
	objs dropreasonObjects
	tp   link.Link
}

// watchDrops attaches the counter to the device ifindex of the namespace
// whose nsfs inode is netns.
func watchDrops(ifindex int, netns uint64) (*dropWatch, error) {
	spec, err := loadDropreason()
	if err != nil {
		return nil, err
	}
	if err := spec.Variables[dropreasonVarTargetIfindex].Set(int32(ifindex)); err != nil {
		return nil, err
	}
	if err := spec.Variables[dropreasonVarTargetNetns].Set(uint32(netns)); err != nil {
		return nil, err
	}
	w := &dropWatch{}
	if err := spec.LoadAndAssign(&w.objs, nil); err != nil {
		return nil, fmt.Errorf("load kfree_skb counter (needs root and kernel BTF): %w", err)
	}
	w.tp, err = link.AttachTracing(link.TracingOptions{Program: w.objs.CountDrop})
	if err != nil {
		w.objs.Close()
		return nil, fmt.Errorf("attach tp_btf/kfree_skb: %w", err)
	}
	return w, nil
}

// count returns how many drops with reason were seen.
func (w *dropWatch) count(reason uint32) (uint64, error) {
	var n uint64
	err := w.objs.Drops.Lookup(reason, &n)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return 0, nil
	}
	return n, err
}

// all returns every reason seen and its count.
func (w *dropWatch) all() (map[uint32]uint64, error) {
	m := map[uint32]uint64{}
	var k uint32
	var v uint64
	it := w.objs.Drops.Iterate()
	for it.Next(&k, &v) {
		m[k] = v
	}
	return m, it.Err()
}

func (w *dropWatch) Close() error {
	err := w.tp.Close()
	return errors.Join(err, w.objs.Close())
}

// nsInode returns the nsfs inode number of the namespace file fd.
func nsInode(fd int) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("fstat netns: %w", err)
	}
	return st.Ino, nil
}

// burstDrops returns a counter of the frames __dev_xmit_skb() freed with
// QDISC_BURST_DROP on the tap since now. On a kernel without that reason
// there is no defer list and no such drop, and the counter stays 0.
func (te *tapEnv) burstDrops(t testing.TB) func() (uint64, error) {
	t.Helper()
	reason, err := burstDropReason()
	if errors.Is(err, feature.ErrNotSupported) {
		t.Logf("no burst drops to count: %v", err)
		return func() (uint64, error) { return 0, nil }
	}
	if err != nil {
		t.Fatalf("probe QDISC_BURST_DROP: %v", err)
	}
	w, err := watchDrops(te.ifindex, te.nsInode(t))
	if err != nil {
		t.Fatalf("count QDISC_BURST_DROP: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return func() (uint64, error) { return w.count(reason) }
}

// burstWhy names the frames a ledger's Discarded holds in the races.
const burstWhy = "QDISC_BURST_DROP before the qdisc (net.core.qdisc_max_burst), refused with ENOBUFS"

// sample is the tap's counters and the burst drops, read together.
type sample struct {
	state
	burst uint64
}

func (s sample) String() string { return fmt.Sprintf("%v; QDISC_BURST_DROP %d", s.state, s.burst) }

func (te *tapEnv) sampler(burst func() (uint64, error)) func() (sample, error) {
	return func() (sample, error) {
		st, err := te.state()
		if err != nil {
			return sample{}, err
		}
		b, err := burst()
		return sample{st, b}, err
	}
}
