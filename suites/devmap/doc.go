// Package devmap validates seed 004, "bpf: Run devmap xdp_prog on flush
// instead of bulk enqueue" (Linux 5.14): a devmap entry's XDP program runs
// when the bulk queue is flushed, over one destination's frames in sequence,
// not at each enqueue. A logged sequence is judged against a model of devmap.c.
// docs/suites.md has the detail, kernels/expectations what each kernel shows.
//
// # Files
//
//   - ordering_test.go, model_test.go, sequence_test.go, notation_test.go, helpers_test.go: the seed's claim,
//     the model and TestModel, the sequences' notation, the ledger and the verdict
//   - broadcast_test.go, copies_test.go, drop_test.go, resize_test.go, program_test.go: what D does and sees
//   - lifecycle_test.go, samedevice_test.go, tap_test.go: entries replaced, two ways to a device, a full tap
//   - rig_test.go, pool_test.go, shared_test.go, driver_test.go, drivers_test.go: the rig and its drivers
//   - bench_test.go: BenchmarkRedirect, the seed's table
//   - main_test.go, expectations_test.go, gen.go: TestMain (leaks), known defects as XFAIL, bpf2go
package devmap
