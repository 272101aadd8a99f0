// Package qdisc checks qdisc scheduling and wake-ups on the transmit path
// (seed 003, "net: add a fast path in __netif_schedule()").
//
// Seed 003 lets __netif_schedule() return without raising NET_TX_SOFTIRQ
// when q->defer_list is not empty, trusting the CPU inside __dev_xmit_skb()
// to run the queue. The risk of such a change is a lost wake-up: a packet
// left in a qdisc that nobody runs. The suite observes the fast path itself
// where the kernel has defer_list, proves on every kernel that no packet is
// stranded, and measures the cost the patch removes.
//
// Paths under test, each a locked qdisc (pfifo, fq_codel; never pfifo_fast,
// which is lockless and never uses defer_list) on a device that stops and
// wakes its queue often:
//   - veth_xdp: a veth whose peer drains with an XDP counter program (veth
//     stops its txq when the peer's NAPI ring is full and wakes it from
//     veth_poll, where the kernel has qdisc backpressure); veth_xdp_fast is
//     the same with no busy loop in the consumer, so that the qdisc lock is
//     the bottleneck;
//   - tap_backpressure: a tap opened with IFF_BACKPRESSURE (seed 000) and a
//     reader; it stops its txq when the ring is full.
//
// Tests (one behaviour each):
//   - TestDeferList: the BTF fact "struct Qdisc has defer_list"; a kernel
//     without it has no seed 003 (absent, naming the probe).
//   - TestFastPath: 2×vCPUs senders through pfifo on veth_xdp_fast until
//     300 calls of __netif_schedule() found q->defer_list non-empty with
//     __QDISC_STATE_SCHED clear (60 s at most; fewer fail the test as
//     proving nothing); BPF (bpf/fastpath.c: fentry/fexit on
//     __netif_schedule and netif_tx_wake_queue, tp_btf/softirq_raise)
//     counts those of them that scheduled the qdisc anyway (SCHED set and
//     NET_TX raised within the call, the list's head unchanged): none where
//     the fast path is. Debian's 7.2 inlines __netif_schedule() into
//     netif_tx_wake_queue(), hence the second hook. Skips, through the
//     defer_list probe, where the member is missing.
//   - TestNoStrandedPackets: N senders (N = vCPUs and 2×vCPUs) for a
//     bounded time; afterwards the backlog reaches 0 and
//     sent = delivered + device drops + qdisc drops exactly.
//   - TestProgress: while the load runs, delivery never stands still for
//     500 ms (sampled every 10 ms over 2 s).
//   - TestReactivate: link down/up or root qdisc replace under load; no
//     stranded backlog afterwards and a fresh load balances exactly.
//
// Benchmarks (reported, not asserted): BenchmarkContention (throughput and
// NET_TX softirq raises per delivered packet, the cost seed 003 removes, and
// where the kernel has defer_list the calls that found it non-empty) and
// BenchmarkTapBackpressure (1, 2, 4, 8 senders through one tap queue, flag
// off and on: the regression that made seed 000 opt-in).
//
// The ledger has one term no qdisc counter shows: with q->defer_list
// (7.2+), __dev_xmit_skb() frees a frame with
// SKB_DROP_REASON_QDISC_BURST_DROP when more than net.core.qdisc_max_burst
// wait on the list; the sender gets ENOBUFS and "tc -s qdisc" never sees
// it. internal/dropmon counts them on skb:kfree_skb, filtered to the device
// (the reason's value comes from BTF), and the ledger books them as its
// uncounted term. On debian:7.3 under
// TCG, 4 senders through fq_codel lost 13978 of 68000 frames this way.
//
// What each kernel must show is in kernels/expectations.
//
// 003 is absent where TestDeferList's probe finds no Qdisc.defer_list in
// BTF (TestFastPath then skips, naming it); where the member is there,
// TestFastPath decides present or BROKEN. The no-stranded-packets, progress
// and reactivate tests run everywhere (their tap_backpressure variants need
// IFF_BACKPRESSURE, their fq_codel variants fq_codel).
//
// Running: as root on this machine, go test ./suites/qdisc -v -count=1; on a
// catalog kernel, go run ./cmd/xmitcheck run --kernel debian:7.3
// ./suites/qdisc (the runner loads tun and sch_fq_codel and sets
// XMITCHECK_KERNEL). Benchmarks with a fixed frame count, so that a slow
// guest stays bounded: -test.run '^$' -test.bench . -test.benchtime 20000x.
package qdisc
