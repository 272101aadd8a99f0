package devmap

import "context"

// Driver pushes frames through the rig's main program.
type Driver interface {
	// Push makes the main program run over frames frames, in batches of
	// batch frames each closed by one xdp_do_flush (native XDP; generic
	// XDP has nothing to flush and sends each frame on at once), and
	// returns once it has run for all of them.
	Push(ctx context.Context, frames, batch int) error
	// Path is the way the driver's frames take through the devmap.
	Path() Path
}

// Path is how redirected frames reach their devmap entry's program.
type Path int

const (
	// Native: xdp_frames on the per-device bulk queue (bq_enqueue); the
	// devmap program runs when the queue is flushed (seed 004), and
	// xdp:xdp_devmap_xmit reports every flush.
	Native Path = iota
	// Generic: sk_buffs (generic, SKB-mode XDP). dev_map_generic_redirect
	// runs the entry's program on each frame right after the main program
	// and transmits it with generic_xdp_tx: no bulk queue, no flush, no
	// xdp_devmap_xmit event, and the devmap program sees no metadata
	// (bpf_prog_run_generic_xdp starts it with data_meta == data). Seed 004
	// never changed this path: its order is EnqueueTime on every kernel.
	Generic
)

// Model is the sequence of program runs the path produces on a kernel
// with seed 004.
func (p Path) Model() func(Traffic, map[uint32]Entry) []Run {
	if p == Generic {
		return EnqueueTime
	}
	return FlushTime
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
