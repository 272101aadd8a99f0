// Package devmap validates seed 004, "bpf: Run devmap xdp_prog on flush
// instead of bulk enqueue" (Linux 5.14): the XDP program of a devmap entry
// runs when the per-device bulk queue is flushed, at the end of the NAPI
// poll or when the queue holds 16 frames, over the frames of one destination
// in sequence, not when each frame is enqueued.
//
// A main program (M) redirects frames through a devmap whose entries carry
// devmap programs (D); both log their runs in one sequence, and a
// tracepoint program logs every flush (xdp:xdp_devmap_xmit). TestOrdering
// compares that sequence with what kernel/bpf/devmap.c makes of whatever
// polls the kernel cut the frames into: exactly that shows the seed,
// exactly the enqueue-time sequence of the kernels before it reports it
// absent, anything else fails. The tests of broadcast, drops, resizing and
// metadata judge their sequences the same way, once every frame is
// accounted for. Frames come in through BPF_PROG_TEST_RUN with live frames,
// a veth with native XDP (its NAPI in softirq or threaded), and generic
// XDP. What each kernel must show is in kernels/expectations.
//
// # Files
//
//   - bench_test.go: BenchmarkRedirect, the seed's table: redirect rate with and without a devmap program
//   - broadcast_test.go: TestBroadcast: a copy per entry with BPF_F_BROADCAST, none to the ingress when excluded
//   - copies_test.go: TestBroadcastCopies: each broadcast copy is a frame of its own that its program may rewrite
//   - driver_test.go: the driver interface (how frames come in) and struct xdp_md
//   - drivers_test.go: the drivers: live frames, veth with NAPI in softirq or threaded, generic XDP
//   - drop_test.go: TestDevmapDrop: frames the devmap program drops, counted at the flush
//   - expectations_test.go: the known kernel defects the suite meets, reported as XFAIL
//   - gen.go: the go:generate line that compiles bpf/devmap.c with bpf2go
//   - helpers_test.go: the ledger, and the verdict of a logged sequence on seed 004 (judge, report)
//   - lifecycle_test.go: TestLifecycle: entries and programs replaced and deleted while frames flow
//   - main_test.go: TestMain: leaked file descriptors or links fail the binary
//   - model_test.go: the model of kernel/bpf/devmap.c: when D runs, the polls, explain and classify
//   - notation_test.go: the notation of logged sequences (M0-16>0 D0-15@10/A F16@10): format and parse
//   - ordering_test.go: TestOrdering, the seed's claim: programs run at the flush, one destination at a time
//   - pool_test.go: each driver's rig, kept for the next test of that driver while it stays as built
//   - program_test.go: TestDevmapProgram: the egress device, the ingress device and the metadata D sees
//   - resize_test.go: TestResize: devmap programs that grow or shrink their frame at the flush
//   - rig_test.go: the rig: namespace, devices, the programs' setup, and the logs of runs and flushes
//   - samedevice_test.go: TestSameDevice: two ways to one device, each with its own program (a known issue)
//   - sequence_test.go: TestModel: the model held to recorded and hand-made wrong sequences
//   - shared_test.go: the binary's one load of bpf/devmap.c and flush counter, its maps reset for each test
//   - tap_test.go: TestRedirectToTap: XDP frames into a full tap with IFF_BACKPRESSURE (seed 000)
package devmap
