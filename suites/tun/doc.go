// Package tun validates what seed 000 (IFF_BACKPRESSURE, Linux 7.3) and
// its 2014 ancestor, seed 002, promise about a tap whose ring fills: with
// the flag and a qdisc the produce that fills the ring stops the queue and
// the qdisc holds what follows, instead of tun tail-dropping it; without a
// qdisc tail-drop stays; a reader wakes the queue at ring/2 consumed; no
// queue stays stopped, whatever happens to the tap.
//
// TestBackpressure and TestWakeHysteresis show the stop and the wake,
// TestClassify tells seed 002's verdict and 000's apart, TestTailDrop holds
// the tail-drop that stays; TestRaceSmallRing and TestDetachRace race the
// stop's second look and the wake's owner check; the other tests keep the
// promise through several queues, modes, senders and teardowns. Every
// assertion prints the ledger: sent = read + tun drops + qdisc drops +
// qdisc backlog + in the ring (+ uncounted, with what freed them). A kernel
// without the flag skips the tests that need it, naming the TUNGETFEATURES
// probe; one that keeps the flag but tail-drops exactly as before is 000
// absent. What each kernel must show is in kernels/expectations.
//
// # Files
//
//   - attach_test.go: TestAttachWake, a file that takes over a stopped queue wakes it
//   - backpressure_test.go: TestBackpressure, TestWakeHysteresis: the stop at the full ring, the wake at ring/2
//   - bench_test.go: BenchmarkTap, seed 000's table
//   - classify_test.go: TestProbe, TestClassify: the flag's probe; seed 002's verdict and 000's
//   - cpu_test.go: place, the CPUs of BenchmarkTap's reader and senders
//   - detachrace_test.go: TestDetachRace, the owner check raced by queue files detached and re-attached under traffic
//   - dropreason_test.go: kfree_skb drops on the tap by reason (FULL_RING, QDISC_BURST_DROP)
//   - entries_test.go: entryReader, for reads that carry more than a frame
//   - gso_test.go: gsoSender, TCP packets over the MTU for TestModes
//   - ledger_test.go: idleFate, the model of where frames go; the ledger; the fill fixture
//   - main_test.go: TestMain, leaked file descriptors and stray links fail the binary
//   - modes_test.go: TestModes, tun, NAPI, virtio-net headers, GSO packets
//   - mqrig_test.go: mqTap, the two-queue rig
//   - multiqueue_test.go: TestQueuesApart, TestWakesOnItsOwn, TestDetachReattach: queues stop and wake apart
//   - nostall_test.go: TestDrainFlushesBacklog, TestTxqlenChange, TestLinkDownUp, TestPersistReattach: no stall
//   - pacing_test.go: TestPacing, a sender that can wait
//   - race_test.go: TestRace, several senders against one reader
//   - rig_test.go: tapRig, a namespace with a tap, its qdisc and senders
//   - smallring_test.go: TestRaceSmallRing, the stop's second look raced on rings of 1 to 4 by a polling reader
//   - steering_test.go: streamSteering, a TUNSETSTEERINGEBPF program: stream s to queue s mod queues
//   - streams_test.go: checkStreams, every stream in order and held to the ledger
//   - taildrop_test.go: TestTailDrop, stock tail-drop, and noqueue with the flag
//   - tcpstreams_test.go: BenchmarkTCPStreams, TCP into a VM through a read() consumer: what made 000 opt-in
//   - teardown_test.go: TestTeardown, a stopped tap closed, detached, deleted
//   - udpstream_test.go: BenchmarkUDPStream, seed 002's netperf UDP_STREAM (1024-byte messages) through a tap
package tun
