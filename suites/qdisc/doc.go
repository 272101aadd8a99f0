// Package qdisc validates seed 003, "net: add a fast path in
// __netif_schedule()": while q->defer_list holds a frame, a CPU inside
// __dev_xmit_skb() will run the qdisc, so __netif_schedule() returns
// without raising NET_TX_SOFTIRQ. The risk of such a change is a lost
// wake-up: a frame left in a qdisc that nobody runs.
//
// The rigs (rig_test.go) put a locked root qdisc (pfifo, fq_codel) on a
// device that stops and wakes its queue: a veth whose peer drains with XDP
// from a threaded NAPI poll, and a tap with IFF_BACKPRESSURE (seed 000)
// and a reader. N sender threads contend for the qdisc (load_test.go); a
// test's kernel splat fails it (internal/guest/kmsg).
//
//   - TestDeferList (probe_test.go): struct Qdisc has defer_list in BTF; a
//     kernel without it cannot have the seed.
//   - TestFastPath (fastpath_test.go, bpf/fastpath.c): the calls of
//     __netif_schedule() that found defer_list holding a frame returned
//     early (present), all scheduled the qdisc (absent), or a mix (BROKEN).
//   - TestNoStrandedPackets, TestProgress, TestReactivate: no frame is
//     stranded and delivery never stands still, with or without the seed.
//   - TestBurstDropsCounted: frames dropped on defer_list's burst limit
//     show in a counter (docs/findings/qdisc-burst-drop.md).
//
// Every ledger is sent = delivered + device drops + qdisc drops + backlog +
// the burst drops only kfree_skb sees (rig_test.go, account). Benchmarks
// (bench_test.go) report the NET_TX raises the seed saves; nothing there is
// asserted but the ledger. What each kernel must show is in
// kernels/expectations.
package qdisc
