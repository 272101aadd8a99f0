package devmap

import "context"

// Driver pushes frames through the rig's main program.
type Driver interface {
	// Push makes the main program run over frames frames, in batches of
	// batch frames each closed by one xdp_do_flush, and returns once it
	// has run for all of them.
	Push(ctx context.Context, frames, batch int) error
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
