// Package tun validates seed 000 (IFF_BACKPRESSURE, Linux 7.3) and its 2014
// ancestor, seed 002, on a tap whose ring fills: with the flag and a qdisc the
// queue stops at the full ring instead of tun tail-dropping, a reader wakes it
// at ring/2, and no queue stays stopped. Every assertion prints the ledger;
// docs/suites.md has the detail, kernels/expectations what each kernel shows.
//
// # Files
//
//   - backpressure_test.go, classify_test.go, taildrop_test.go: the stop, the wake, 002 and 000 told apart, tail-drop
//   - attach_test.go, multiqueue_test.go, nostall_test.go, teardown_test.go: no queue stays stopped
//   - detachrace_test.go, smallring_test.go, race_test.go: the races (taprace, a polling reader)
//   - modes_test.go, gso_test.go, pacing_test.go, entries_test.go: modes, GSO, a sender that waits
//   - rig_test.go, mqrig_test.go, ledger_test.go, streams_test.go, steering_test.go, dropreason_test.go: rigs,
//     the model of where frames go and the ledger, streams in order, drops by reason
//   - bench_test.go, cpu_test.go, tcpstreams_test.go, udpstream_test.go: the benchmarks and their CPUs
//   - main_test.go: TestMain, leaks fail the binary
package tun
