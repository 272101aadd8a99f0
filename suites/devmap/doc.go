// Package devmap validates seed 004, "bpf: Run devmap xdp_prog on flush
// instead of bulk enqueue" (Linux 5.14): the XDP program of a devmap entry
// runs when the per-device bulk queue is flushed, at the end of the NAPI
// poll or when the queue holds 16 frames, over the frames of one destination
// in sequence, not when each frame is enqueued.
//
// A main program (M) redirects frames through a devmap whose entries carry
// devmap programs (D); both log their runs in one sequence, a tracepoint
// program logs every flush (xdp:xdp_devmap_xmit), and sinks on the
// destinations count or keep what arrived. The tests compare the logged
// sequence with what kernel/bpf/devmap.c makes of whatever polls the kernel
// cut the frames into: exactly that passes, exactly the enqueue-time
// sequence of the kernels before the seed reports it absent, anything else
// fails. Frames come in through BPF_PROG_TEST_RUN with live frames, a veth
// with native XDP (its NAPI in softirq or threaded), and generic XDP.
//
// Where to look:
//
//	model_test.go         the model: when D runs, the polls, explain and classify
//	sequence_test.go      the model held to recorded and wrong sequences
//	rig_test.go           the namespace, devices, programs and their logs
//	drivers_test.go       the ways frames come in
//	bpf/devmap.c          the BPF programs (bpf2go: bpf_bpfel.go, bpf_bpfel.o)
//	expectations_test.go  the known kernel defects, reported as XFAIL
//
// What each kernel must show is in kernels/expectations. Regenerating the
// BPF objects (go generate) needs clang ≥ 14, llvm-strip, libbpf-dev and
// linux-libc-dev; building the tests needs none of them.
package devmap
