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
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/cpus"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/nopreempt"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// driverSpec is a driver by name; new puts it on a rig.
type driverSpec struct {
	name   string
	native bool
	new    func(tb testing.TB, r *rig) driver
}

// drivers are the ways in: BPF_PROG_TEST_RUN with live frames (5.18+) and
// real frames on a veth pair with the main program in native mode, its NAPI
// in softirq or in a thread of its own (threaded NAPI, 5.12+), all on the
// native path; and real frames with the main program in generic (SKB) mode.
var drivers = []driverSpec{
	{"LiveFrames", true, newLiveDriver},
	{"Veth", true, func(tb testing.TB, r *rig) driver { return newVethDriver(tb, r, false) }},
	{"VethThreaded", true, func(tb testing.TB, r *rig) driver { return newVethDriver(tb, r, true) }},
	{"Generic", false, newGenericDriver},
}

// liveDriver runs xdp_main with BPF_F_TEST_XDP_LIVE_FRAMES: every repetition
// is a real frame that is really redirected, and the kernel calls
// xdp_do_flush after every batch_size frames (net/bpf/test_run.c).
type liveDriver struct {
	r     *rig
	frame []byte
}

// newLiveDriver skips tb when the kernel has no live frames.
func newLiveDriver(tb testing.TB, r *rig) driver {
	tb.Helper()
	observe.Probe(tb, feature.XDPLiveFrames, probeLiveFrames(r.objs.XdpSink))
	return &liveDriver{r: r, frame: traffic.Frame([6]byte{2, 0, 0, 0, 0, 1}, 1, 0)}
}

func (d *liveDriver) push(ctx context.Context, frames, batch int) error {
	return d.r.runLive(d.r.objs.XdpMain, d.frame, frames, batch)
}

func (d *liveDriver) when() when                    { return atFlush }
func (d *liveDriver) polls(frames, batch int) []int { return batches(frames, batch) }

// runLive runs prog over frames copies of frame with
// BPF_F_TEST_XDP_LIVE_FRAMES, arriving on in0, flushing every batch frames.
// The kernel looks the ingress ifindex up in the caller's namespace, so the
// run happens in the rig's.
//
// A signal stops the run with EINTR after some frames went out, and
// cilium/ebpf runs it again from the start (RunOptions.Reset): those frames
// would go out twice. The run therefore blocks SIGURG, the signal the Go
// runtime preempts goroutines with (nopreempt.Do), and a run that is still
// interrupted is an error, never a duplicate.
func (r *rig) runLive(prog *ebpf.Program, frame []byte, frames, batch int) error {
	return r.env.Do(func() error {
		return nopreempt.Do(func() error { return r.runLiveOnce(prog, frame, frames, batch) })
	})
}

func (r *rig) runLiveOnce(prog *ebpf.Program, frame []byte, frames, batch int) error {
	interrupted := false
	_, err := prog.Run(&ebpf.RunOptions{
		Data:      frame,
		Context:   xdpMd{DataEnd: uint32(len(frame)), IngressIfindex: ifindex(r.in)},
		Repeat:    uint32(frames),
		BatchSize: uint32(batch),
		Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
		Reset:     func() { interrupted = true },
	})
	if err == nil && interrupted {
		err = errors.New("interrupted by a signal and run again: the frames sent before the signal went out twice")
	}
	if err != nil {
		return fmt.Errorf("BPF_PROG_TEST_RUN %v with live frames, repeat %d batch %d: %w", prog, frames, batch, err)
	}
	return nil
}

// probeLiveFrames runs prog once with BPF_F_TEST_XDP_LIVE_FRAMES and
// batch_size 1. Kernels before 5.18 either refuse the flag (EINVAL) or, like
// 5.10, ignore flags for XDP and refuse the unknown batch_size field at the
// end of union bpf_attr (E2BIG).
var probeLiveFrames = func() func(*ebpf.Program) error {
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
				result = feature.Unsupported(feature.XDPLiveFrames,
					"BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES and batch_size 1 returned %v", err)
			case err != nil:
				result = fmt.Errorf("probe BPF_F_TEST_XDP_LIVE_FRAMES: %w", err)
			}
		})
		return result
	}
}()

// vethDriver sends real frames into in0p. xdp_main runs natively on in0, in
// veth's NAPI poll, which calls xdp_do_flush once per poll. To offer a poll
// a burst of n frames, tc_burst on in0p's egress clones each sent frame
// n-1 times with bpf_clone_redirect, from inside the first frame's
// dev_queue_xmit; how many of them one poll takes is the kernel's affair.
type vethDriver struct {
	r      *rig
	sender *traffic.Sender
}

// newVethDriver attaches xdp_main to in0 and tc_burst to in0p, or skips tb
// when the kernel has no clsact or cls_bpf; threaded moves in0's NAPI to a
// kernel thread, or skips tb when the kernel cannot.
func newVethDriver(tb testing.TB, r *rig, threaded bool) driver {
	tb.Helper()
	observe.Require(tb, attachBurst(r))
	r.attachXDP(tb, r.in, r.objs.XdpMain)
	if threaded {
		switch err := r.env.ThreadedNAPI(r.in.Attrs().Name); {
		case errors.Is(err, netenv.ErrNoThreadedNAPI):
			tb.Skipf("in0's NAPI cannot be threaded: %v (threaded NAPI came in 5.12)", err)
		case err != nil:
			tb.Fatalf("threaded NAPI on in0: %v", err)
		}
	}
	return &vethDriver{r: r, sender: newSender(tb, r)}
}

// newSender opens an AF_PACKET sender on in0p, for as long as the rig
// lasts.
func newSender(tb testing.TB, r *rig) *traffic.Sender {
	tb.Helper()
	var s *traffic.Sender
	err := r.env.Do(func() (err error) {
		s, err = traffic.NewSender(r.sender.Attrs().Index, 1)
		return err
	})
	if err != nil {
		tb.Fatalf("sender on in0p: %v", err)
	}
	r.onClose(s.Close)
	return s
}

func (d *vethDriver) push(ctx context.Context, frames, batch int) error {
	if batch > maxPoll || frames%batch != 0 {
		return fmt.Errorf("veth driver: batch %d must be ≤ %d (the NAPI budget) and divide %d frames",
			batch, maxPoll, frames)
	}
	var c bpfConfig
	if err := d.r.objs.Config.Lookup(uint32(0), &c); err != nil {
		return err
	}
	c.Burst = uint32(batch)
	if err := d.r.objs.Config.Put(uint32(0), &c); err != nil {
		return err
	}
	return sendPaced(ctx, d.r, d.sender, frames/batch, batch)
}

func (d *vethDriver) when() when                    { return atFlush }
func (d *vethDriver) polls(frames, batch int) []int { return nil }

// sendPaced sends n frames on in0p, and after each waits until the main
// program has numbered per more frames (the frame and the copies tc_burst
// made of it).
func sendPaced(ctx context.Context, r *rig, s *traffic.Sender, n, per int) error {
	var st bpfState
	get := func() (uint32, error) {
		err := r.objs.State.Lookup(uint32(0), &st)
		return st.Frames, err
	}
	base, err := get()
	if err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		res, err := s.Send(1)
		if err != nil || res.Sent != 1 {
			return fmt.Errorf("send frame %d on in0p: %+v %v", i, res, err)
		}
		want := base + uint32(i*per)
		_, err = counters.WaitFor(ctx, 5*time.Second, get, func(n uint32) bool { return n >= want })
		if err != nil {
			return fmt.Errorf("main program numbered frames up to %d of %d: %w", st.Frames, want, err)
		}
	}
	return nil
}

// genericDriver sends real frames into in0p, one at a time; xdp_main runs
// in generic (SKB) mode on in0, from netif_receive_skb. No tc burst: a
// clone made by bpf_clone_redirect carries skb->redirected, and generic XDP
// lets such frames pass without running the program.
type genericDriver struct {
	r      *rig
	sender *traffic.Sender
}

// newGenericDriver attaches xdp_main to in0 in generic mode, or skips tb
// when the kernel refuses: before 5.15 generic XDP ran no devmap programs
// and refused (EINVAL) a program that uses a devmap whose entries can carry
// one (dev.c's generic_xdp_install, "generic XDP does not work with DEVMAPs
// that can have a bpf_prog installed on an entry").
func newGenericDriver(tb testing.TB, r *rig) driver {
	tb.Helper()
	err := r.attachXDPFlags(r.in, r.objs.XdpMain, nl.XDP_FLAGS_SKB_MODE)
	if errors.Is(err, unix.EINVAL) {
		observe.Require(tb, feature.Unsupported(feature.GenericDevmapProg,
			"attaching xdp_main, whose devmaps carry programs, in SKB mode returned %v "+
				"(devmap programs in generic XDP came in 5.15)", err))
	}
	if err != nil {
		tb.Fatalf("attach xdp_main to in0 in generic mode: %v", err)
	}
	r.generic = true
	return &genericDriver{r: r, sender: newSender(tb, r)}
}

// push sends frames one by one, from one CPU; batch does not matter to
// generic XDP, which transmits every frame at once. A frame's programs run
// in the backlog of the CPU that sent it (netif_rx), and a frame's M run,
// all the sender waits for, comes before its D runs: from two CPUs, on a
// kernel that lets that processing be preempted or deferred (PREEMPT_RT),
// two frames interleave their runs, and the runs log assumes one CPU at a
// time (bpf/devmap.c). One CPU's backlog takes the frames in turn.
func (d *genericDriver) push(ctx context.Context, frames, batch int) error {
	all, err := cpus.Allowed()
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		// Returns with its thread locked and bound: the runtime ends it.
		if err := cpus.Pin(all[0]); err != nil {
			errc <- err
			return
		}
		errc <- sendPaced(ctx, d.r, d.sender, frames, 1)
	}()
	return <-errc
}

func (d *genericDriver) when() when                    { return atOnce }
func (d *genericDriver) polls(frames, batch int) []int { return nil }

// attachBurst puts a clsact qdisc on in0p with tc_burst on its egress.
// ENOENT or EOPNOTSUPP (sch_ingress or cls_bpf missing) means unsupported.
func attachBurst(r *rig) error {
	qd := &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: r.sender.Attrs().Index,
			Handle:    netlink.MakeHandle(0xffff, 0),
			Parent:    netlink.HANDLE_CLSACT,
		},
		QdiscType: "clsact",
	}
	unsupported := func(f feature.Feature, err error) error {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
			return feature.Unsupported(f, "adding it to in0p returned %v (load sch_ingress and cls_bpf)", err)
		}
		return fmt.Errorf("add tc %s to in0p: %w", f, err)
	}
	if err := r.env.Handle.QdiscAdd(qd); err != nil {
		return unsupported(feature.TCClsact, err)
	}
	f := &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: r.sender.Attrs().Index,
			Parent:    netlink.HANDLE_MIN_EGRESS,
			Handle:    netlink.MakeHandle(0, 1),
			Protocol:  unix.ETH_P_ALL,
			Priority:  1,
		},
		Fd:           r.objs.TcBurst.FD(),
		Name:         "tc_burst",
		DirectAction: true,
	}
	if err := r.env.Handle.FilterAdd(f); err != nil {
		return unsupported(feature.TCBPFFilter, err)
	}
	return nil
}

// probeBroadcast runs probe_broadcast once (no live frames needed):
// bpf_redirect_map returns XDP_REDIRECT for BPF_F_BROADCAST where the flag
// exists and XDP_ABORTED where it does not.
func probeBroadcast(r *rig) error {
	ret, err := r.objs.ProbeBroadcast.Run(&ebpf.RunOptions{Data: make([]byte, traffic.FrameLen)})
	if err != nil {
		return fmt.Errorf("probe BPF_F_BROADCAST: %w", err)
	}
	if ret != 4 { // XDP_REDIRECT
		return feature.Unsupported(feature.BPFBroadcast,
			"bpf_redirect_map with BPF_F_BROADCAST returned %d, not XDP_REDIRECT, in BPF_PROG_TEST_RUN", ret)
	}
	return nil
}
