package devmap

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/traffic"
)

// Drivers are the two ways in: BPF_PROG_TEST_RUN with live frames (5.18+)
// and real frames on a veth pair (any kernel with native XDP on veth).
var Drivers = []struct {
	Name string
	New  func(tb testing.TB, r *Rig) Driver
}{
	{"LiveFrames", NewLiveDriver},
	{"Veth", NewVethDriver},
}

// liveDriver runs xdp_main with BPF_F_TEST_XDP_LIVE_FRAMES: every repetition
// is a real frame that is really redirected, and the kernel calls
// xdp_do_flush after every BatchSize frames (net/bpf/test_run.c).
type liveDriver struct {
	r     *Rig
	frame []byte
}

// NewLiveDriver skips tb when the kernel has no live frames.
func NewLiveDriver(tb testing.TB, r *Rig) Driver {
	tb.Helper()
	feature.Require(tb, ProbeLiveFrames(r.Objs.XdpSink))
	return &liveDriver{r: r, frame: traffic.Frame([6]byte{2, 0, 0, 0, 0, 1}, 1, 0)}
}

func (d *liveDriver) Push(ctx context.Context, frames, batch int) error {
	return d.r.RunLive(d.r.Objs.XdpMain, d.frame, frames, batch)
}

// RunLive runs prog over frames copies of frame with
// BPF_F_TEST_XDP_LIVE_FRAMES, arriving on in0, flushing every batch frames.
// The kernel looks the ingress ifindex up in the caller's namespace, so the
// run happens in the rig's.
func (r *Rig) RunLive(prog *ebpf.Program, frame []byte, frames, batch int) error {
	return r.Env.Do(func() error {
		_, err := prog.Run(&ebpf.RunOptions{
			Data:      frame,
			Context:   xdpMd{DataEnd: uint32(len(frame)), IngressIfindex: uint32(r.In.Attrs().Index)},
			Repeat:    uint32(frames),
			BatchSize: uint32(batch),
			Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
		})
		if err != nil {
			return fmt.Errorf("BPF_PROG_TEST_RUN %v with live frames, repeat %d batch %d: %w", prog, frames, batch, err)
		}
		return nil
	})
}

// ProbeLiveFrames runs prog once with BPF_F_TEST_XDP_LIVE_FRAMES and
// batch_size 1. Kernels before 5.18 either refuse the flag (EINVAL) or, like
// 5.10, ignore flags for XDP and refuse the unknown batch_size field at the
// end of union bpf_attr (E2BIG).
var ProbeLiveFrames = func() func(*ebpf.Program) error {
	var once sync.Once
	var result error
	return func(prog *ebpf.Program) error {
		once.Do(func() {
			_, err := prog.Run(&ebpf.RunOptions{
				Data:      make([]byte, traffic.FrameLen),
				Repeat:    1,
				BatchSize: 1,
				Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
			})
			switch {
			case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.E2BIG) || errors.Is(err, ebpf.ErrNotSupported):
				result = feature.Unsupported(feature.XDPLiveFrames, "BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES and batch_size 1 returned %v", err)
			case err != nil:
				result = fmt.Errorf("probe BPF_F_TEST_XDP_LIVE_FRAMES: %w", err)
			}
		})
		return result
	}
}()

// vethDriver sends real frames into in0p. xdp_main runs natively on in0, in
// veth's NAPI poll, which calls xdp_do_flush once per poll. To make a batch
// of n frames arrive in one poll, tc_burst on in0p's egress clones each sent
// frame n-1 times with bpf_clone_redirect; the clones are transmitted from
// inside the first frame's dev_queue_xmit, with bottom halves off, so the
// NAPI poll that follows finds all n in in0's ring (n ≤ 64, the NAPI budget).
type vethDriver struct {
	r      *Rig
	sender *traffic.Sender
}

// NewVethDriver attaches xdp_main to in0 and tc_burst to in0p, or skips tb
// when the kernel has no clsact or cls_bpf.
func NewVethDriver(tb testing.TB, r *Rig) Driver {
	tb.Helper()
	feature.Require(tb, attachBurst(r))
	r.AttachXDP(tb, r.In, r.Objs.XdpMain)
	var s *traffic.Sender
	err := r.Env.Do(func() (err error) {
		s, err = traffic.NewSender(r.Sender.Attrs().Index, 1)
		return err
	})
	if err != nil {
		tb.Fatalf("sender on in0p: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return &vethDriver{r: r, sender: s}
}

func (d *vethDriver) Push(ctx context.Context, frames, batch int) error {
	if batch > 64 || frames%batch != 0 {
		return fmt.Errorf("veth driver: batch %d must be ≤ 64 (the NAPI budget) and divide %d frames", batch, frames)
	}
	var c bpfConfig
	if err := d.r.Objs.Config.Lookup(uint32(0), &c); err != nil {
		return err
	}
	c.Burst = uint32(batch)
	if err := d.r.Objs.Config.Put(uint32(0), &c); err != nil {
		return err
	}
	var st bpfState
	get := func() (uint32, error) {
		err := d.r.Objs.State.Lookup(uint32(0), &st)
		return st.Frames, err
	}
	base, err := get()
	if err != nil {
		return err
	}
	for i := 1; i <= frames/batch; i++ {
		res, err := d.sender.Send(1)
		if err != nil || res.Sent != 1 {
			return fmt.Errorf("send burst %d on in0p: %+v %v", i, res, err)
		}
		// Wait for the whole burst before the next one, so that bursts
		// never share a NAPI poll.
		want := base + uint32(i*batch)
		_, err = counters.WaitFor(ctx, 5*time.Second, get, func(n uint32) bool { return n >= want })
		if err != nil {
			return fmt.Errorf("main program numbered frames up to %d of %d: %w", st.Frames, want, err)
		}
	}
	return nil
}

// attachBurst puts a clsact qdisc on in0p with tc_burst on its egress.
// ENOENT or EOPNOTSUPP (sch_ingress or cls_bpf missing) means unsupported.
func attachBurst(r *Rig) error {
	qd := &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: r.Sender.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
		QdiscType:  "clsact",
	}
	unsupported := func(f feature.Feature, err error) error {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
			return feature.Unsupported(f, "adding it to in0p returned %v (load sch_ingress and cls_bpf)", err)
		}
		return fmt.Errorf("add tc %s to in0p: %w", f, err)
	}
	if err := r.Env.Handle.QdiscAdd(qd); err != nil {
		return unsupported(feature.TCClsact, err)
	}
	f := &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: r.Sender.Attrs().Index,
			Parent:    netlink.HANDLE_MIN_EGRESS,
			Handle:    netlink.MakeHandle(0, 1),
			Protocol:  unix.ETH_P_ALL,
			Priority:  1,
		},
		Fd:           r.Objs.TcBurst.FD(),
		Name:         "tc_burst",
		DirectAction: true,
	}
	if err := r.Env.Handle.FilterAdd(f); err != nil {
		return unsupported(feature.TCBPFFilter, err)
	}
	return nil
}

// ProbeBroadcast runs probe_broadcast once (no live frames needed):
// bpf_redirect_map returns XDP_REDIRECT for BPF_F_BROADCAST where the flag
// exists and XDP_ABORTED where it does not.
func ProbeBroadcast(r *Rig) error {
	ret, err := r.Objs.ProbeBroadcast.Run(&ebpf.RunOptions{Data: make([]byte, traffic.FrameLen)})
	if err != nil {
		return fmt.Errorf("probe BPF_F_BROADCAST: %w", err)
	}
	if ret != 4 { // XDP_REDIRECT
		return feature.Unsupported(feature.BPFBroadcast, "bpf_redirect_map with BPF_F_BROADCAST returned %d, not XDP_REDIRECT, in BPF_PROG_TEST_RUN", ret)
	}
	return nil
}
