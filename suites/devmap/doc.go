// Package devmap validates seed 004 ("bpf: Run devmap xdp_prog on flush
// instead of bulk enqueue", Linux 5.14): the XDP program attached to a
// devmap entry (BPF_XDP_DEVMAP) runs when the per-device bulk queue is
// flushed, over the frames of one destination in sequence, not when each
// frame is enqueued.
//
// The programs are in bpf/devmap.c: a main program (M) redirects through a
// DEVMAP or DEVMAP_HASH whose entries carry a devmap program (D); both stamp
// one sequence counter into a log, so a test reads back the exact order of
// M and D runs, and which frame each D run saw (a number M writes into the
// payload and into the metadata), on which device, with which program. A raw
// tracepoint program counts xdp:xdp_devmap_xmit (sent and dropped per flush);
// sinks on the destinations' veth peers count what arrived. The expected
// sequences come from two models (model_test.go): FlushTime, derived from
// kernel/bpf/devmap.c with the seed, and EnqueueTime, before it.
//
// Three drivers push frames through the main program (Drivers), on two
// paths (Path). On the native path: BPF_PROG_TEST_RUN with
// BPF_F_TEST_XDP_LIVE_FRAMES (5.18+), and real frames sent into a veth pair
// whose receiving end runs the main program natively; a tc program on the
// sending end turns each frame into a burst so one NAPI poll sees a whole
// batch (needs clsact and cls_bpf: the sch_ingress and cls_bpf modules). On
// the generic path: the same veth pair with the main program in generic
// (SKB) mode, one frame at a time. Generic XDP has no bulk queue on any
// kernel: dev_map_generic_redirect runs the entry's program on each frame
// right after the main program (the EnqueueTime order), without metadata
// and without xdp_devmap_xmit; before 5.15 it refused devmap programs
// altogether (the Generic subtests skip, saying so).
//
// The tests, one behaviour each:
//
//	TestOrdering                 D runs after the M runs of its bulk, grouped per device (exact sequence)
//	TestDevmapProgram            D sees the right egress_ifindex and M's metadata, once per frame
//	TestDevmapDrop               D's XDP_DROP: not sent, counted by xdp_devmap_xmit only
//	TestBroadcast                BPF_F_BROADCAST (± BPF_F_EXCLUDE_INGRESS): one D run per copy, every copy at its sink
//	TestBroadcastCopies          a D that rewrites its copy changes no other destination's copy
//	TestLifecycle                update, delete, replace programs under traffic
//	TestSameDevice               two ways to one device with different programs (known issue)
//	TestRedirectToTap            XDP into an IFF_BACKPRESSURE tap whose ring is full: who drops, who counts (seed 000's flag)
//	BenchmarkRedirect            redirect pps, Native vs Native + 2nd xdp_prog (the seed's table)
//
// What each kernel must show is in kernels/expectations.
//
// Skips are decided by probes and say which: live frames by a
// BPF_PROG_TEST_RUN with the flag and batch_size 1, BPF_F_BROADCAST by
// bpf_redirect_map's return value in a test run, devmap programs in generic
// XDP by attaching the main program in SKB mode.
//
// On 5.10 (no seed) the live-frames and generic subtests skip and the veth
// ones carry the tests. Each native test first accounts for every frame,
// then reports seed 004 absent (feature.Absent, an XFAIL where the
// expectation says the seed is absent, a failure anywhere else) only when it
// saw exactly the behaviour from before the seed: ordering "devmap program
// ran at enqueue time" (runs alternate M D; the batch-1 control passes), the
// devmap program saw no metadata (dev_map_run_prog invalidated it), its drops
// never reached xdp_devmap_xmit. Any other deviation fails plainly, and the
// runner calls the seed BROKEN.
//
// An XFAIL is a skip whose reason starts with "XFAIL", given only when the
// exact documented defect is observed (KnownIssues), on the driver where it
// occurs, and only after every frame is accounted for: on the native path,
// two ways to one device (two entries, or an entry and bpf_redirect) run the
// program the device's bulk queue latched first for the whole bulk, against
// the seed's per-entry semantics, on every kernel with the seed
// (docs/findings/devmap-same-device.md); and 6.1's live-frames runner
// misplaces the xdp_frame, so broadcast copies made by xdpf_clone reach their
// sinks as foreign frames (the veth driver carries broadcast there).
//
// Measured differences of the generic path: 6.1's dev_map_redirect_multi
// hands every destination an skb_clone sharing one buffer and runs each
// program on it in place, so a program that rewrites its copy rewrites all
// (TestBroadcastCopies/…/Generic is the known issue generic-clone-shared there); 6.12 and later copy
// a cloned skb before the entry's program. Into a tap whose ring is full
// (7.3, IFF_BACKPRESSURE): the native path tail-drops in tun_xdp_xmit,
// counted per frame by xdp_devmap_xmit and once per call in tx_dropped, and
// never stops the queue; the generic path goes through tun_net_xmit, which
// stops the queue, and generic_xdp_tx then drops every later frame (one
// tx_dropped each) while a frame through the qdisc waits for the reader.
//
// Building needs no clang: bpf_bpfel.go and bpf_bpfel.o are generated and
// committed. `go generate ./suites/devmap` regenerates them with cilium/ebpf's
// bpf2go, which needs clang ≥ 14 and llvm-strip (Debian's clang and llvm) and
// the headers of libbpf-dev and linux-libc-dev.
package devmap
