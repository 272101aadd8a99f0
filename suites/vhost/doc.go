// Package vhost validates the vhost-net side of seed 000 (Linux 7.3): with
// IFF_BACKPRESSURE and a qdisc a full tap stops its txq, and vhost-net, taking
// the ring in batches, wakes it by tun's rule. A userspace guest
// (internal/guest/vhostnet) plays the VM; every test ends with an exact ledger.
// docs/suites.md has the detail, kernels/expectations what each kernel shows.
//
// # Files
//
//   - backpressure_test.go, wakerule_test.go: the stop and each wake, against tapModel batch by batch
//   - detach_test.go, reattach_test.go, teardown_test.go, twoqueues_test.go: no txq stays stopped
//   - detachrace_test.go, smallring_test.go, load_test.go: the races (taprace, a vhost-net guest); BenchmarkRX
//   - stock_test.go, delivery_test.go: what any kernel with vhost-net does
//   - rig_test.go, setup_test.go, receiver_test.go, state_test.go, stopped_test.go, burst_test.go: the rig and
//     its variants, the guest's checks, counters and ledger, a stopped queue, burst drops
//   - tcpstreams_test.go: BenchmarkTCPStreams, TCP into a VM through vhost-net
//   - main_test.go: TestMain, leaks fail the binary
package vhost
