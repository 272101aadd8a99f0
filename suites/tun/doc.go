// Package tun validates what seed 000 (IFF_BACKPRESSURE, Linux 7.3) and
// its 2014 ancestor, seed 002, promise about a tap whose ring fills: with
// the flag and a qdisc the produce that fills the ring stops the queue and
// the qdisc holds what follows, instead of tun tail-dropping it; without a
// qdisc tail-drop stays; a reader wakes the queue at ring/2 consumed; no
// queue stays stopped, whatever happens to the tap.
//
// Each test builds a namespace, a tap through /dev/net/tun ioctls
// (tapRig; mqTap for two queues) and sends sequence-numbered frames from
// AF_PACKET sockets through the qdisc. Every assertion prints the ledger:
// sent = read + tun drops + qdisc drops + qdisc backlog + in the ring
// (+ uncounted, with what freed them). Where to look:
//
//	rig_test.go, ledger_test.go   the rig, the model of where frames go (idleFate), the fill fixture
//	backpressure_test.go          the stop at the full ring, the wake at ring/2
//	taildrop_test.go              stock tail-drop, and noqueue with the flag
//	classify_test.go              the probe; seed 002's verdict and 000's, absent or present
//	nostall_test.go               drain, txqueuelen change, link down/up, persistent reopen
//	multiqueue_test.go            queues stop and wake apart; detach and re-attach
//	attach_test.go                a file that takes over a stopped index wakes it
//	race_test.go, pacing_test.go  several senders; a sender that can wait
//	modes_test.go, gso_test.go    tun, NAPI, virtio-net headers, GSO packets
//	teardown_test.go              a stopped tap closed, detached, deleted
//	bench_test.go                 seed 000's table (BenchmarkTap)
//
// A kernel without the flag skips the tests that need it, naming the
// TUNGETFEATURES probe; one that keeps the flag but tail-drops exactly as
// before is 000 absent. What each kernel must show is in
// kernels/expectations.
package tun
