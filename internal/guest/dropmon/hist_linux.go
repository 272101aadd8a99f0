package dropmon

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
	"github.com/xmitcheck/xmitcheck/internal/guest/testmain"
)

// tracefs is where the suites' guests mount tracefs (vmtest/guest).
const tracefs = "/sys/kernel/tracing"

// Hist counts skb:kfree_skb events by drop reason with a trace-event
// histogram (a hist trigger, CONFIG_HIST_TRIGGERS), for frames of one
// ethertype on the whole machine. Unlike a BPF program on the tracepoint,
// it does not skip events: the trace event runs with preemption disabled
// and has no per-program recursion guard, while a BPF program is skipped
// (counted only in its recursion_misses) whenever it is already running on
// the CPU, which on PREEMPT_RT, where tracepoints and BPF programs are
// preemptible, happens to one or two kfree_skb in a hundred under the qdisc
// suite's load (docs/design/qdisc-kfree-skb-misses.md).
//
// A Hist reads its instance's counts as differences from where they stood
// when WatchHist returned it, so one instance serves a whole binary.
type Hist struct {
	inst *histInstance
	// base are the instance's counts by reason, and its dropped events,
	// when the Hist began.
	base        map[uint32]uint64
	baseDropped uint64
}

// histInstance is a tracefs instance whose kfree_skb trigger counts the
// frames of one ethertype.
type histInstance struct {
	dir     string
	trigger string
	set     bool // the trigger is on
}

// ErrNoHist is WatchHist's error where it cannot make a histogram: no
// tracefs mounted, or a kernel without hist triggers.
var ErrNoHist = errors.New("no kfree_skb histogram")

var histSeq atomic.Uint64

// sharedHists are the binary's instances, one per ethertype, made at the
// first WatchHist and removed when its tests have ended (testmain.AtEnd):
// under the emulator, making an instance and removing it again takes 0.3 to
// 0.5 s (RCU grace periods as its events come and go), which a test of
// several rounds paid each round.
var sharedHists struct {
	sync.Mutex
	by map[uint16]*histInstance
	// none is why the kernel cannot make one (ErrNoHist): asked once.
	none error
}

// WatchHist starts counting the kfree_skb events of frames with ethertype
// proto (skb->protocol), by reason, until tb ends. Where tracefs is not
// mounted or the kernel has no hist triggers it returns an error that
// matches ErrNoHist; any other failure fails tb.
func WatchHist(tb testing.TB, proto uint16) (*Hist, error) {
	tb.Helper()
	defer profile.Start(tb, profile.Setup).End()
	inst, err := histFor(tb, proto)
	if err != nil {
		return nil, err
	}
	h := &Hist{inst: inst}
	if h.base, h.baseDropped, err = inst.read(); err != nil {
		observe.Lost(tb, "the kfree_skb histogram: %v", err)
	}
	// An event the histogram could not store makes every count of the
	// test short.
	tb.Cleanup(func() {
		n, err := h.dropped()
		switch {
		case err != nil:
			observe.Lost(tb, "the kfree_skb histogram: %v", err)
		case n > 0:
			observe.Lost(tb, "the kfree_skb histogram dropped %d events (map full, or a key claimed on another CPU)", n)
		}
	})
	return h, nil
}

// shareHists says whether the binary's tests run under testmain.Run, which
// removes the shared instances when they have ended.
var shareHists = testmain.Running

// histFor returns the binary's instance for proto, made at the first call;
// a binary whose tests do not run under testmain.Run, which would not
// remove it, gets one of its own for tb.
func histFor(tb testing.TB, proto uint16) (*histInstance, error) {
	tb.Helper()
	if !shareHists() {
		inst, err := newHistInstance(tb, proto)
		if err == nil {
			tb.Cleanup(func() {
				if err := inst.close(); err != nil {
					tb.Errorf("dropmon: %v", err)
				}
			})
		}
		return inst, err
	}
	sharedHists.Lock()
	defer sharedHists.Unlock()
	if inst := sharedHists.by[proto]; inst != nil {
		return inst, nil
	}
	if sharedHists.none != nil {
		return nil, sharedHists.none
	}
	inst, err := newHistInstance(tb, proto)
	if err != nil {
		sharedHists.none = err
		return nil, err
	}
	if sharedHists.by == nil {
		sharedHists.by = map[uint16]*histInstance{}
	}
	sharedHists.by[proto] = inst
	testmain.AtEnd(inst.close)
	return inst, nil
}

// newHistInstance makes a tracefs instance counting the kfree_skb events
// of ethertype proto. An error matches ErrNoHist; it removes what it made.
func newHistInstance(tb testing.TB, proto uint16) (*histInstance, error) {
	tb.Helper()
	instances := filepath.Join(tracefs, "instances")
	if _, err := os.Stat(instances); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: tracefs is not mounted at %s", ErrNoHist, tracefs)
	}
	dir := filepath.Join(instances, fmt.Sprintf("xmitcheck-%d-%d", os.Getpid(), histSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		observe.Fault(tb, feature.Environment, "dropmon: make a tracefs instance (tracefs at %s): %v", tracefs, err)
	}
	// Keyed by CPU as well: a key's first insertion can race only with
	// events on other CPUs (the trigger runs with preemption disabled), and
	// tracing_map drops an event that finds its key claimed but not yet
	// filled in by another CPU for map_size tries (__tracing_map_insert,
	// kernel/trace/tracing_map.c). With the CPU in the key no two CPUs
	// insert the same key.
	h := &histInstance{
		dir:     dir,
		trigger: fmt.Sprintf("hist:keys=common_cpu,reason:vals=hitcount if protocol == %d", proto),
	}
	// Every way out but the last, a returned error or a fault that ends
	// the test, removes the instance.
	made := false
	defer func() {
		if !made {
			if err := h.close(); err != nil {
				tb.Errorf("dropmon: %v", err)
			}
		}
	}()
	// The instance's ring buffer only holds each event until the trigger
	// has it (the event itself stays disabled): one page per CPU.
	if err := os.WriteFile(filepath.Join(dir, "buffer_size_kb"), []byte("4"), 0); err != nil {
		observe.Fault(tb, feature.Environment, "dropmon: shrink the instance's buffer: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "events/skb/kfree_skb/hist")); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf(
			"%w: the kernel has no hist triggers (CONFIG_HIST_TRIGGERS), no events/skb/kfree_skb/hist in tracefs", ErrNoHist)
	}
	format, err := os.ReadFile(filepath.Join(dir, "events/skb/kfree_skb/format"))
	if err != nil {
		observe.Fault(tb, feature.Environment, "dropmon: %v", err)
	}
	if !bytes.Contains(format, []byte(" reason;")) {
		return nil, fmt.Errorf("%w: skb:kfree_skb has no reason field (before 5.17)", ErrNoHist)
	}
	if err := os.WriteFile(h.triggerFile(), []byte(h.trigger), 0); err != nil {
		observe.Fault(tb, feature.Environment, "dropmon: set %q on skb:kfree_skb: %v", h.trigger, err)
	}
	h.set, made = true, true
	return h, nil
}

// dropped returns how many events the histogram could not store since h
// began.
func (h *Hist) dropped() (uint64, error) {
	_, d, err := h.inst.read()
	return d - h.baseDropped, err
}

func (h *histInstance) triggerFile() string {
	return filepath.Join(h.dir, "events/skb/kfree_skb/trigger")
}

var (
	histEntry   = regexp.MustCompile(`(?m)^\{ (?:common_)?cpu:\s*\d+, reason:\s*(\d+) \} hitcount:\s*(\d+)$`)
	histDropped = regexp.MustCompile(`(?m)^\s*Dropped: (\d+)$`)
	histLine    = regexp.MustCompile(`(?m)^\{`)
)

// Counts returns the events seen since h began by reason value (the
// kernel's enum skb_drop_reason), summed over the CPUs. An event the
// histogram could not store (its map full, or a key another CPU had claimed
// but not filled in) is an error: the counts would be short.
func (h *Hist) Counts() (map[uint32]uint64, error) {
	by, dropped, err := h.inst.read()
	if err != nil {
		return nil, err
	}
	if dropped != h.baseDropped {
		return nil, fmt.Errorf(
			"the kfree_skb histogram dropped %d events (map full, or a key being inserted on another CPU)",
			dropped-h.baseDropped)
	}
	for r, n := range h.base {
		if by[r] -= n; by[r] == 0 {
			delete(by, r)
		}
	}
	return by, nil
}

// read returns the instance's counts by reason value, summed over the
// CPUs, and how many events it could not store.
func (h *histInstance) read() (map[uint32]uint64, uint64, error) {
	b, err := os.ReadFile(filepath.Join(h.dir, "events/skb/kfree_skb/hist"))
	if err != nil {
		return nil, 0, fmt.Errorf("read the kfree_skb histogram: %w", err)
	}
	d := histDropped.FindSubmatch(b)
	if d == nil {
		return nil, 0, fmt.Errorf("the kfree_skb histogram has no Dropped total: %q", b)
	}
	dropped, err := strconv.ParseUint(string(d[1]), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("the kfree_skb histogram's Dropped total %q: %w", d[1], err)
	}
	entries := histEntry.FindAllSubmatch(b, -1)
	if n := len(histLine.FindAll(b, -1)); n != len(entries) {
		// A format this parser does not know would read as no frees.
		return nil, 0, fmt.Errorf("the kfree_skb histogram has %d entries, %d of them in the expected form: %q",
			n, len(entries), b)
	}
	by := map[uint32]uint64{}
	for _, m := range entries {
		r, err := strconv.ParseUint(string(m[1]), 10, 32)
		if err != nil {
			return nil, 0, fmt.Errorf("histogram key %q: %w", m[1], err)
		}
		n, err := strconv.ParseUint(string(m[2]), 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("histogram count %q: %w", m[2], err)
		}
		by[uint32(r)] += n
	}
	return by, dropped, nil
}

// Total returns every event counted so far.
func (h *Hist) Total() (FreedCount, error) { return total(h.Counts()) }

// Count returns the events seen so far with reason.
func (h *Hist) Count(reason uint32) (uint64, error) {
	by, err := h.Counts()
	return by[reason], err
}

func (h *histInstance) close() error {
	if h.set {
		if err := os.WriteFile(h.triggerFile(), []byte("!"+h.trigger), 0); err != nil {
			return fmt.Errorf("remove the kfree_skb histogram: %w", err)
		}
	}
	if err := os.Remove(h.dir); err != nil {
		return fmt.Errorf("remove tracefs instance %s: %w", h.dir, err)
	}
	return nil
}
