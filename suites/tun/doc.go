// Package tun validates tun/tap stop-queue semantics: what seed 000
// ("tun/tap & vhost-net: avoid ptr_ring tail-drop when a qdisc is present",
// opt-in through IFF_BACKPRESSURE in Linux 7.3) and its 2014 ancestor, seed
// 002 ("tun: stop tx queue when limit is hit", never merged), promise about
// a tap whose ring fills.
//
// Every test builds its own namespace (netenv), a tap through /dev/net/tun
// ioctls with ring size R = txqueuelen, a root "pfifo limit P" (or noqueue)
// through netlink, and sends raw Ethernet frames from an AF_PACKET socket
// bound to the tap, so every frame passes the qdisc and tun_net_xmit and is
// counted. Each assertion prints the whole ledger:
//
//	sent = received (read) + device drops (tun's tx_dropped) + qdisc drops
//	       + qdisc backlog + in device (the ring) (+ uncounted)
//
// (counters.Accounting) where "uncounted" are frames the kernel frees
// without a counter (a ring shrunk by a txqueuelen change, a ring purged
// when its queue detaches, a qdisc reset when the link goes down, a
// QDISC_BURST_DROP before the qdisc on 7.2+).
//
// Tests, and what each kernel is expected to do with them (P pass, S skip
// with the probe's reason); "stock" variants run with the flag off,
// "backpressure" variants with it on:
//
//	test                                        5.10 6.1 6.12 7.2 7.3 host 6.18
//	TestProbe                                    P    P   P    P   P   P
//	TestClassify/flag=*/qdisc=* (reports it)     P    P   P    P   P   P
//	TestTailDrop/qdisc=* (invariant 1)           P    P   P    P   P   P
//	TestTailDrop/*/DropReason (FULL_RING)        S    P   P    P   P   P
//	TestBackpressure/StopAtLimit/* (2, 7)        S    S   S    S   P   S
//	TestBackpressure/NoqueueKeepsTailDrop (3)    S    S   S    S   P   S
//	TestBackpressure/WakeHysteresis/* (4)        S    S   S    S   P   S
//	TestNoStall/*/stock (5)                      P    P   P    P   P   P
//	TestNoStall/*/backpressure (5)               S    S   S    S   P   S
//	TestMultiQueue/*/stock (5)                   P    P   P    P   P   P
//	TestMultiQueue/*/backpressure (5)            S    S   S    S   P   S
//	TestRace/threads=*/stock (6)                 P    P   P    P   P   P
//	TestRace/threads=*/backpressure (6)          S    S   S    S   P   S
//
// A skip names the probe that decided it: TUNGETFEATURES lacking
// IFF_BACKPRESSURE (0x80), kernel BTF lacking SKB_DROP_REASON_FULL_RING.
// TestClassify reports "backpressure" only for 7.3 with the flag and a
// qdisc; a kernel that stops the queue without the flag (seed 000 as first
// merged, or seed 002) makes it fail, so such a kernel cannot hide.
//
// Seed 002's semantics, stop at the limit instead of dropping, are exactly
// what TestBackpressure asserts with the flag: its names say "StopAtLimit",
// the limit is txqueuelen as in 002, and the wake is 000's hysteresis. The
// exact stop point is 000's (read in 7.3's tun_net_xmit): the produce that
// leaves the ring full stops the queue, so the ring holds exactly R and the
// qdisc everything after; 002, on the pre-ptr_ring socket queue, stopped one
// frame later and woke as soon as the queue was below the limit.
//
// The benchmarks (BenchmarkTap) report received pps and lost/s with 1 and 2
// sending threads, flag off against flag on with fq_codel, the shape of the
// table in seed 000.
package tun
