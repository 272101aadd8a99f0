// Package devmap validates seed 004 ("bpf: Run devmap xdp_prog on flush
// instead of bulk enqueue", Linux 5.14): the XDP program attached to a
// devmap entry (BPF_XDP_DEVMAP) runs when the per-device bulk queue is
// flushed, over the frames of one destination in sequence, not when each
// frame is enqueued.
//
// The programs are in bpf/devmap.c: a main program (M) redirects through a
// DEVMAP or DEVMAP_HASH whose entries carry a devmap program (D); both stamp
// one sequence counter into a log, so a test reads back the exact order of
// M and D runs and what each D run saw. A raw tracepoint program counts
// xdp:xdp_devmap_xmit (sent and dropped per flush); sinks on the
// destinations' veth peers count what arrived.
//
// Two drivers push frames through the main program (see Drivers):
// BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES (5.18+), and real frames
// into a veth pair with native XDP (any kernel), batched by a tc program.
package devmap
