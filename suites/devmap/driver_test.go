package devmap

import "context"

// driver pushes frames through the rig's main program.
type driver interface {
	// push makes the main program run over frames frames, in bursts of
	// batch (one xdp_do_flush after each on the live-frames runner; at
	// most one NAPI poll's worth on veth, which may take it in several),
	// and returns once it has run for all of them.
	push(ctx context.Context, frames, batch int) error
	// when is when the devmap program runs on a kernel with seed 004:
	// atFlush on the native path, atOnce on the generic one.
	when() when
	// polls are the polls the driver makes the kernel take for frames
	// pushed in bursts of batch; nil when the kernel decides (NAPI).
	polls(frames, batch int) []int
}

// xdpMd is struct xdp_md, the context of an XDP program:
//
//	struct xdp_md {
//		__u32 data; __u32 data_end; __u32 data_meta;
//		__u32 ingress_ifindex; __u32 rx_queue_index; __u32 egress_ifindex;
//	};
type xdpMd struct {
	Data, DataEnd, DataMeta      uint32
	IngressIfindex, RxQueueIndex uint32
	EgressIfindex                uint32
}
