// Package qdisc validates seed 003, "net: add a fast path in
// __netif_schedule()": while q->defer_list holds a frame, a CPU inside
// __dev_xmit_skb() will run the qdisc, so __netif_schedule() returns
// without raising NET_TX_SOFTIRQ. The risk of such a change is a lost
// wake-up: a frame left in a qdisc that nobody runs.
//
// TestFastPath observes the seed: the calls of __netif_schedule() that
// found defer_list holding a frame returned early (present), all scheduled
// the qdisc (absent), or a mix (BROKEN); TestDeferList finds the member in
// BTF. TestNoStrandedPackets and TestReactivate hold every kernel, seed or
// not, to what the seed must keep: delivery never standing still, no frame
// stranded; TestOwnerRunsItsBatch, what the fast path leans on: the CPU that
// owns defer_list runs the qdisc after a batch of two frames or more.
// TestBurstDropsCounted asks that frames dropped on defer_list's
// burst limit show in a counter (docs/findings/qdisc-burst-drop.md). N
// senders contend for a locked root qdisc (pfifo, fq_codel) on a device
// that stops and wakes its queue; every ledger is exact, and a kernel splat
// fails the test. What each kernel must show is in kernels/expectations.
//
// # Files
//
//   - batch_trace_test.go: the tracer of bpf/batch.c: how many frames each __dev_queue_xmit() call enqueued
//   - bench_test.go: benchmarks: the NET_TX raises the seed saves, and the cost of tap backpressure
//   - bpf_test.go: small programs in asm: the XDP stream counter, NET_TX raise and __netif_schedule() counters
//   - burst_test.go: TestBurstDropsCounted: frames dropped on defer_list's burst limit show in a counter
//   - fastpath_test.go: TestFastPath, the seed itself, and its verdict
//   - fastpath_trace_test.go: the tracer of bpf/fastpath.c: attach, and its counts summed over CPUs
//   - fifo_test.go: a root bfifo with a byte limit, requested by hand
//   - gen.go: the go:generate lines that compile bpf/fastpath.c and bpf/batch.c with bpf2go
//   - load_test.go: the load: N sender threads, each with its own socket and stream
//   - main_test.go: TestMain: leaked file descriptors or links fail the binary
//   - nostall_test.go: TestNoStrandedPackets: delivery moves under load; once the senders stop, the qdisc empties
//   - owner_test.go: TestOwnerRunsItsBatch: after bursts that end on a defer_list batch, the qdisc drains
//   - probe_test.go: TestDeferList and its probe: struct Qdisc has defer_list in the kernel's BTF
//   - progress_test.go: watchProgress: delivery never stands still under load
//   - reactivate_test.go: TestReactivate: link down/up and qdisc replace under load
//   - rig_test.go: the rigs (veth drained by XDP, tap with IFF_BACKPRESSURE and a reader), their counters and ledger
//   - sysctl_test.go: a sysctl set for one test and restored after it
package qdisc
