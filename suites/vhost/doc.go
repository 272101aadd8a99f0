// Package vhost validates the vhost-net side of seed 000 ("tun/tap &
// vhost-net: avoid ptr_ring tail-drop when a qdisc is present", Linux 7.3):
// with IFF_BACKPRESSURE and a qdisc, a tap whose ring is full stops its txq
// instead of dropping, and vhost-net, which takes the ring's entries in
// batches of up to 64, wakes it by tun's rule: ring/2 consumed since the
// stop, or the ring empty. A userspace vhost-net guest (internal/guest/vhost)
// plays the VM, so each test decides when the guest posts buffers.
//
// Where to look:
//   - wakerule_test.go: tapModel, the rule and vhost's batches step by step;
//     backpressure_test.go holds the kernel to it after every batch.
//   - detach_test.go, reattach_test.go, twoqueues_test.go: taking vhost or a
//     queue file away from a stopped txq, or stopping a sibling queue, never
//     leaves a txq stopped for good.
//   - teardown_test.go: vhost and the tap torn apart while stopped free
//     every frame exactly once.
//   - stock_test.go, delivery_test.go: what any kernel with vhost-net does
//     (tail-drop without the flag; frames intact and in order, both ways).
//   - load_test.go: two senders against a paced guest, and BenchmarkRX.
//   - rig_test.go, state_test.go, receiver_test.go, stopped_test.go: the
//     rig, its counters and ledger, the guest's checks, the stopped queue.
//
// Every test ends with an exact ledger (sent = received + tun drops + qdisc
// drops + still queued, + what the kernel freed uncounted, counted on
// kfree_skb) and fails on a kernel splat. Probes (IFF_BACKPRESSURE,
// /dev/vhost-net, fq_codel, drop reasons) decide the skips, each naming its
// probe; kernels/expectations says what each kernel must show.
package vhost
