// Package qdisc validates seed 003, "net: add a fast path in
// __netif_schedule()": while q->defer_list holds a frame, __netif_schedule()
// returns without raising NET_TX_SOFTIRQ. Every kernel, seed or not, is held to
// what the seed must keep: no frame stranded in a qdisc nobody runs.
// docs/suites.md has the detail, kernels/expectations what each kernel shows.
//
// # Files
//
//   - fastpath_test.go, fastpath_trace_test.go, probe_test.go: TestFastPath, the seed, its tracer; TestDeferList
//   - nostall_test.go, progress_test.go, reactivate_test.go: no stranded frame, under load and reconfiguration
//   - owner_test.go, batch_trace_test.go, burst_test.go: the owner's batch and its tracer; burst drops counted
//   - rig_test.go, load_test.go, fifo_test.go, sysctl_test.go, bpf_test.go: the rigs, the load, small programs
//   - bench_test.go: the NET_TX raises saved, the cost of tap backpressure
//   - main_test.go, gen.go: TestMain (leaks fail the binary); bpf2go
package qdisc
