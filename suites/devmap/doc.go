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
// sequences come from two models (sequence.go): FlushTime, derived from
// kernel/bpf/devmap.c with the seed, and EnqueueTime, before it.
//
// Two drivers push frames through the main program (Drivers): BPF_PROG_TEST_RUN
// with BPF_F_TEST_XDP_LIVE_FRAMES (5.18+), and real frames sent into a veth
// pair whose receiving end runs the main program natively; a tc program on the
// sending end turns each frame into a burst so one NAPI poll sees a whole
// batch (needs clsact and cls_bpf: the sch_ingress and cls_bpf modules).
//
// The tests, one behaviour each:
//
//	TestOrdering                 D runs after the M runs of its bulk, grouped per device (exact sequence)
//	TestDevmapProgram            D sees the right egress_ifindex and M's metadata, once per frame
//	TestDevmapDrop               D's XDP_DROP: not sent, counted by xdp_devmap_xmit only
//	TestBroadcast                BPF_F_BROADCAST (± BPF_F_EXCLUDE_INGRESS): one D run per copy
//	TestLifecycle                update, delete, replace programs under traffic
//	TestSameDevice               two entries on one device with different programs (known issue)
//	BenchmarkRedirect            redirect pps, Native vs Native + 2nd xdp_prog (the seed's table)
//
// Expected verdicts, as measured (subtests per driver: live frames, veth).
// Skips are decided by probes and say which: live frames by a
// BPF_PROG_TEST_RUN with the flag and batch_size 1, BPF_F_BROADCAST by
// bpf_redirect_map's return value in a test run.
//
//	kernel       Ordering      Program       Drop          Broadcast            Lifecycle   SameDevice
//	debian:5.10  FAIL (veth)   FAIL (veth)   FAIL (veth)   skip (no flag)       pass (veth) pass (veth)
//	debian:6.1   pass          pass          pass          XFAIL live, pass veth pass       XFAIL
//	debian:6.12  pass          pass          pass          pass                 pass        XFAIL
//	debian:7.2   pass          pass          pass          pass                 pass        XFAIL
//	debian:7.3   pass          pass          pass          pass                 pass        XFAIL
//	host 6.18    pass          pass          pass          pass                 pass        XFAIL
//
// On 5.10 (no seed) the live-frames subtests skip and the veth ones carry the
// tests: ordering fails with "devmap program ran at enqueue time" (the
// batch-1 control passes), the devmap program sees no metadata
// (dev_map_run_prog invalidates it) and its drops never reach
// xdp_devmap_xmit. An XFAIL is a skip whose reason starts with "XFAIL", given
// only when the exact documented defect is observed (KnownIssues): two
// entries on one device run one program for the whole bulk, against the
// seed's per-entry semantics, on every kernel with the seed; and 6.1's
// live-frames runner misplaces the xdp_frame, so broadcast copies made by
// xdpf_clone are shifted (the veth driver carries broadcast there).
//
// Building needs no clang: bpf_bpfel.go and bpf_bpfel.o are generated and
// committed. `go generate ./suites/devmap` regenerates them with cilium/ebpf's
// bpf2go, which needs clang ≥ 14 and llvm-strip (Debian's clang and llvm) and
// the headers of libbpf-dev and linux-libc-dev.
package devmap
