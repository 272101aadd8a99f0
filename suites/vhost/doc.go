// Package vhost validates the vhost-net side of seed 000 ("tun/tap &
// vhost-net: avoid ptr_ring tail-drop when a qdisc is present", Linux 7.3):
// with IFF_BACKPRESSURE and a qdisc, a tap whose ring is full stops its txq
// instead of dropping, and vhost-net, which takes the ring's entries in
// batches of up to 64, wakes it by tun's rule: ring/2 consumed since the
// stop, or the ring empty. A userspace vhost-net guest (internal/guest/vhostnet)
// plays the VM, so each test decides when the guest posts buffers.
//
// TestBackpressure holds the kernel to tapModel after every batch;
// TestDetachWhileStopped, TestCloseWhileStopped, TestReattach, TestTwoQueues
// and TestTeardown show that no txq stays stopped and every frame is freed
// once; TestRaceSmallRing races the producer's stop with vhost's batches
// on the smallest rings; TestDetachRace races the wake's owner check with
// queue files detached and re-attached under vhost; TestStock and TestDelivery hold what any kernel
// with vhost-net does. Every test ends with an exact ledger (sent = received + tun drops + qdisc
// drops + still queued, + what the kernel freed uncounted, counted on
// kfree_skb) and fails on a kernel splat. Probes (IFF_BACKPRESSURE,
// /dev/vhost-net, fq_codel, drop reasons) decide the skips, each naming its
// probe; kernels/expectations says what each kernel must show.
//
// # Files
//
//   - backpressure_test.go: TestBackpressure, the stop and each wake by tun's rule, batch by batch
//   - burst_test.go: watchBurstDrops, frames freed with QDISC_BURST_DROP
//   - delivery_test.go: TestDelivery, TestTransmit: frames intact and in order, both ways
//   - detach_test.go: TestDetachWhileStopped, TestCloseWhileStopped, TestLinkDownWhileStopped: vhost taken from
//     a stopped txq, or the tap taken down and up under it
//   - detachrace_test.go: TestDetachRace, the owner check raced by vhost on queue files detached and re-attached
//   - load_test.go: TestRace, two senders against a paced guest; BenchmarkRX
//   - main_test.go: TestMain, leaked file descriptors and stray links fail the binary
//   - reattach_test.go: TestReattach, a queue file that takes over a stopped txq wakes it
//   - receiver_test.go: receiver, the guest's checks on each frame it gets
//   - rig_test.go: rig, a namespace with taps, their qdisc, guests and senders
//   - setup_test.go: setup, the rig's variants (flag, qdisc, queues, ring, virtio features)
//   - smallring_test.go: TestRaceSmallRing, the stop's second look raced by a busy-polling vhost on rings of 1 to 4
//   - state_test.go: state, the tap's and qdisc's counters; the ledger
//   - stock_test.go: TestStock, tail-drop without the flag
//   - stopped_test.go: stop, a queue stopped with vhost's batch taken; readTap
//   - tcpstreams_test.go: BenchmarkTCPStreams, TCP into a VM through vhost-net: what made 000 opt-in
//   - teardown_test.go: TestTeardown, vhost and the tap torn apart while stopped
//   - twoqueues_test.go: TestTwoQueues, a stopped queue leaves its sibling running
//   - wakerule_test.go: tapModel, tun's wake rule and vhost's batches step by step
package vhost
