// SPDX-License-Identifier: GPL-2.0
//
// Programs of the devmap suite (seed 004). The main program (M) redirects
// every frame through a devmap whose entries carry a devmap program (D).
// Both stamp one shared sequence counter into the runs log, so the test
// reads back the exact interleaving of M and D runs, and which frame each D
// run saw, on which device, with which program.
//
// Increments are plain read-modify-write, not atomic fetch-add (which needs
// 5.12 and -mcpu=v3): every run of one test happens on one CPU (one NAPI
// poll or one BPF_PROG_TEST_RUN), and the test checks the totals, so a lost
// update would show as a count mismatch.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define RUNS 4096         // entries of the runs log (a power of two)
#define FLUSHES 1024      // entries of the flush log (a power of two)
#define PATTERN 64        // destination keys the main program cycles through
#define PLAIN_KEY 63      // a pattern key that means bpf_redirect(cfg->plain_ifindex): no devmap
#define MAX_BURST 64      // frames one tc burst turns a sent frame into
#define ETH_P_XMITCHECK 0x88B5
#define BURST_MARK 0x786d6974
#define NUMBER_AT 30 // payload offset of the frame number, after traffic.Frame's header
#define MARK_AT 34   // payload offset of the mark xdp_devmap_mark writes into its copy
#define FRAME_BYTES 72 // bytes of a frame the originals and rx logs keep
#define ORIGINALS 256  // entries of the originals log (a power of two)
#define RX_LOG 128     // frames each logging sink keeps
#define VLAN_ID 0x123  // the VID xdp_devmap_vlan tags with
#define TRAILER 4      // bytes xdp_devmap_trim removes and xdp_devmap_pad adds at the tail

char __license[] SEC("license") = "GPL";

// run is one program run, in the order the runs happened.
struct run {
	__u32 kind;    // 'M' or 'D'
	__u32 frame;   // M: number it gave the frame; D: number read from the frame's payload
	__u32 meta;    // the number read from the metadata (~0: none); M: what it wrote
	__u32 dest;    // M: devmap key it redirected to; D: ctx->egress_ifindex
	__u32 prog;    // D: tag of the devmap program; M: 0
	__u32 verdict; // M: bpf_redirect_map's return value; D: the program's verdict
	__u32 ingress; // ctx->ingress_ifindex
	__u32 mark;    // D: the mark found in the payload when the program started; M: 0
};

// config steers the main program; the test writes it before each run.
struct config {
	__u32 pattern_len; // frame n goes to key pattern[n % pattern_len]
	__u32 use_hash;    // redirect through devmap_hash instead of devmap
	__u32 flags;       // bpf_redirect_map flags (BPF_F_BROADCAST, …, fallback action)
	__u32 burst;       // frames tc_burst sends for each frame it sees (1 = none added)
	__u32 ingress;     // ifindex the xdp_devmap_xmit counter accepts as from_dev
	__u32 plain_ifindex; // where PLAIN_KEY redirects, with bpf_redirect
	__u32 keep;        // xdp_main keeps each numbered frame's bytes in originals
};

// state is what the programs count.
struct state {
	__u32 seq;    // runs logged (next slot of runs)
	__u32 frames; // frames the main program numbered
	__u32 flushes; // xdp_devmap_xmit events counted (next slot of flushes)
	__u32 pad;
	__u64 sent;  // their sent, summed
	__u64 drops; // their drops, summed
};

// flush is one xdp_devmap_xmit event: one bulk queue flush.
struct flush {
	__u32 to_ifindex;
	__s32 sent;
	__s32 drops;
	__u32 seq; // runs logged when the flush was traced
};

// seen is what the devmap programs saw on one device, for the life-cycle test.
struct seen_key {
	__u32 ifindex;
	__u32 prog;
};

struct seen {
	__u64 runs;
	__u32 max_frame; // highest frame number + 1 (0: none)
	__u32 pad;
};

// mark_key is what one sink received: frames carrying one mark.
struct mark_key {
	__u32 ifindex; // the sink's device
	__u32 mark;    // the mark in the frame's payload (0: none)
};

// frame_bytes is the head of one frame: len is its length, or FRAME_BYTES + 1
// when it is longer than what b holds.
struct frame_bytes {
	__u32 len;
	__u8 b[FRAME_BYTES];
};

// rx_key is one slot of a logging sink's frames.
struct rx_key {
	__u32 ifindex; // the sink's device
	__u32 slot;    // the frame's place in the order the sink saw them
};

// struct bpf_devmap_val from <linux/bpf.h> (5.8+): ifindex and program fd.
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} devmap SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} devmap_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RUNS);
	__type(key, __u32);
	__type(value, struct run);
} runs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FLUSHES);
	__type(key, __u32);
	__type(value, struct flush);
} flushes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct state);
} state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PATTERN);
	__type(key, __u32);
	__type(value, __u32);
} pattern SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct seen_key);
	__type(value, struct seen);
} seen SEC(".maps");

// received counts our frames per ifindex at the sinks (the destinations'
// peers), foreign every other frame there (e.g. a broadcast copy whose
// Ethernet header is not ours any more), marks our frames per mark.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} received SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} foreign SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct mark_key);
	__type(value, __u64);
} marks SEC(".maps");

// originals holds each numbered frame as xdp_main redirected it (slot: its
// number), when cfg->keep is set.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ORIGINALS);
	__type(key, __u32);
	__type(value, struct frame_bytes);
} originals SEC(".maps");

// rx_count and rx_log are what the logging sinks saw: how many frames per
// ifindex, and the first RX_LOG of them. A sink's NAPI runs on one CPU at a
// time, so its count needs no atomics.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u32);
} rx_count SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 3 * RX_LOG);
	__type(key, struct rx_key);
	__type(value, struct frame_bytes);
} rx_log SEC(".maps");

// watch holds the ifindexes whose xdp_devmap_xmit events are counted.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u32);
} watch SEC(".maps");

static __always_inline void stamp(struct state *st, __u32 kind, __u32 frame, __u32 meta, __u32 dest,
				  __u32 prog, __u32 verdict, __u32 ingress, __u32 mark)
{
	__u32 slot = st->seq & (RUNS - 1);
	struct run *r = bpf_map_lookup_elem(&runs, &slot);

	st->seq++;
	if (!r)
		return;
	r->kind = kind;
	r->frame = frame;
	r->meta = meta;
	r->dest = dest;
	r->prog = prog;
	r->verdict = verdict;
	r->ingress = ingress;
	r->mark = mark;
}

// count adds one to m[key], creating the entry.
static __always_inline void count(void *m, const void *key)
{
	__u64 one = 1, *n = bpf_map_lookup_elem(m, key);

	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(m, key, &one, BPF_NOEXIST);
}

// payload_u32 returns the address of the __u32 at off in the frame, or NULL.
static __always_inline __u32 *payload_u32(struct xdp_md *ctx, __u32 off)
{
	void *data = (void *)(long)ctx->data;

	if (data + off + sizeof(__u32) > (void *)(long)ctx->data_end)
		return 0;
	return data + off;
}

// copy_frame copies the head of the frame into f.
static __always_inline void copy_frame(struct xdp_md *ctx, struct frame_bytes *f)
{
	__u8 *data = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;
	__u32 n = 0;
	int i;

#pragma clang loop unroll(full)
	for (i = 0; i < FRAME_BYTES; i++) {
		if (data + i + 1 > end)
			break;
		f->b[i] = data[i];
		n++;
	}
	if (data + FRAME_BYTES + 1 <= end)
		n = FRAME_BYTES + 1;
	f->len = n;
}

static __always_inline int ours(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *eth = data;

	if (data + 14 > end)
		return 0;
	return eth[12] == (ETH_P_XMITCHECK >> 8) && eth[13] == (ETH_P_XMITCHECK & 0xff);
}

// xdp_main numbers each frame, writes the number into the frame's payload
// and into its metadata (bpf_xdp_adjust_meta), logs an M run and redirects
// to the configured key: through the devmap, or for PLAIN_KEY straight to a
// device with bpf_redirect.
SEC("xdp")
int xdp_main(struct xdp_md *ctx)
{
	__u32 zero = 0, key = 0, frame, idx, ret;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	struct state *st = bpf_map_lookup_elem(&state, &zero);
	__u32 *k;
	void *data, *meta;

	if (!cfg || !st)
		return XDP_ABORTED;
	if (!ours(ctx))
		return XDP_PASS;
	data = (void *)(long)ctx->data;
	if (data + NUMBER_AT + sizeof(__u32) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	frame = st->frames++;
	*(__u32 *)(data + NUMBER_AT) = frame;
	if (cfg->keep) {
		idx = frame & (ORIGINALS - 1);
		struct frame_bytes *o = bpf_map_lookup_elem(&originals, &idx);

		if (o)
			copy_frame(ctx, o);
	}
	if (cfg->pattern_len) {
		idx = frame % cfg->pattern_len;
		k = bpf_map_lookup_elem(&pattern, &idx);
		if (k)
			key = *k;
	}
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(__u32)))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	meta = (void *)(long)ctx->data_meta;
	if (meta + sizeof(__u32) > data)
		return XDP_ABORTED;
	*(__u32 *)meta = frame;

	if (key == PLAIN_KEY)
		ret = bpf_redirect(cfg->plain_ifindex, 0);
	else if (cfg->use_hash)
		ret = bpf_redirect_map(&devmap_hash, key, cfg->flags);
	else
		ret = bpf_redirect_map(&devmap, key, cfg->flags);
	stamp(st, 'M', frame, frame, key, 0, ret, ctx->ingress_ifindex, 0);
	return ret;
}

// devmap_run logs a D run: the frame number from the payload and from the
// metadata (~0 when there is none), the egress device, the program's tag
// and the mark the payload carries.
static __always_inline int devmap_run(struct xdp_md *ctx, __u32 tag, int verdict)
{
	__u32 zero = 0, frame = ~0U, mframe = ~0U, mark = ~0U;
	struct state *st = bpf_map_lookup_elem(&state, &zero);
	void *data = (void *)(long)ctx->data;
	void *meta = (void *)(long)ctx->data_meta;
	struct seen_key sk = { .ifindex = ctx->egress_ifindex, .prog = tag };
	struct seen *s;
	__u32 *p;

	if (!st)
		return XDP_ABORTED;
	if (meta + sizeof(__u32) <= data)
		mframe = *(__u32 *)meta;
	p = payload_u32(ctx, NUMBER_AT);
	if (p)
		frame = *p;
	p = payload_u32(ctx, MARK_AT);
	if (p)
		mark = *p;
	stamp(st, 'D', frame, mframe, ctx->egress_ifindex, tag, verdict, ctx->ingress_ifindex, mark);

	s = bpf_map_lookup_elem(&seen, &sk);
	if (!s) {
		struct seen init = {};

		bpf_map_update_elem(&seen, &sk, &init, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&seen, &sk);
		if (!s)
			return verdict;
	}
	s->runs++;
	if (frame != ~0U && frame + 1 > s->max_frame)
		s->max_frame = frame + 1;
	return verdict;
}

SEC("xdp/devmap")
int xdp_devmap_a(struct xdp_md *ctx)
{
	return devmap_run(ctx, 1, XDP_PASS);
}

SEC("xdp/devmap")
int xdp_devmap_b(struct xdp_md *ctx)
{
	return devmap_run(ctx, 2, XDP_PASS);
}

SEC("xdp/devmap")
int xdp_devmap_drop(struct xdp_md *ctx)
{
	return devmap_run(ctx, 3, XDP_DROP);
}

// xdp_devmap_mark rewrites its copy of the frame: it stamps the egress
// ifindex into the payload, where the sinks read it back (marks).
SEC("xdp/devmap")
int xdp_devmap_mark(struct xdp_md *ctx)
{
	int verdict = devmap_run(ctx, 4, XDP_PASS);
	__u32 *p = payload_u32(ctx, MARK_AT);

	if (!p)
		return XDP_ABORTED;
	*p = ctx->egress_ifindex;
	return verdict;
}

// xdp_devmap_vlan tags its frame for VLAN_ID: bpf_xdp_adjust_head makes room
// for an 802.1Q header after the MAC addresses, which move 4 bytes up.
SEC("xdp/devmap")
int xdp_devmap_vlan(struct xdp_md *ctx)
{
	int verdict = devmap_run(ctx, 5, XDP_PASS);
	__u8 *data, mac[12];
	int i;

	if (bpf_xdp_adjust_head(ctx, -4))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	if (data + 18 > (__u8 *)(long)ctx->data_end)
		return XDP_ABORTED;
#pragma clang loop unroll(full)
	for (i = 0; i < 12; i++)
		mac[i] = data[4 + i];
#pragma clang loop unroll(full)
	for (i = 0; i < 12; i++)
		data[i] = mac[i];
	data[12] = 0x81;
	data[13] = 0x00;
	data[14] = VLAN_ID >> 8;
	data[15] = VLAN_ID & 0xff;
	return verdict;
}

// xdp_devmap_trim shortens its frame by TRAILER bytes (bpf_xdp_adjust_tail).
SEC("xdp/devmap")
int xdp_devmap_trim(struct xdp_md *ctx)
{
	int verdict = devmap_run(ctx, 6, XDP_PASS);

	if (bpf_xdp_adjust_tail(ctx, -TRAILER))
		return XDP_ABORTED;
	return verdict;
}

// xdp_devmap_pad appends a TRAILER-byte trailer, "pad!", to its frame
// (bpf_xdp_adjust_tail); it expects a frame of 60 bytes (traffic.FrameLen).
SEC("xdp/devmap")
int xdp_devmap_pad(struct xdp_md *ctx)
{
	int verdict = devmap_run(ctx, 7, XDP_PASS);
	__u8 *data, *end;

	if (bpf_xdp_adjust_tail(ctx, TRAILER))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + 60 + TRAILER > end || data + 60 + TRAILER + 1 <= end)
		return XDP_ABORTED;
	data[60] = 'p';
	data[61] = 'a';
	data[62] = 'd';
	data[63] = '!';
	return verdict;
}

// xdp_sink sits on the destinations' peers: veth's ndo_xdp_xmit needs an XDP
// program on the receiving end, and the sink counts what arrived: our
// frames per mark, and every other frame as foreign.
SEC("xdp")
int xdp_sink(struct xdp_md *ctx)
{
	struct mark_key mk = { .ifindex = ctx->ingress_ifindex };
	__u32 *p;

	if (!ours(ctx)) {
		count(&foreign, &mk.ifindex);
		return XDP_DROP;
	}
	count(&received, &mk.ifindex);
	p = payload_u32(ctx, MARK_AT);
	if (p)
		mk.mark = *p;
	count(&marks, &mk);
	return XDP_DROP;
}

// xdp_sink_log is a sink that keeps every frame's bytes, ours or not, in
// the order it received them (rx_count, rx_log).
SEC("xdp")
int xdp_sink_log(struct xdp_md *ctx)
{
	struct rx_key k = { .ifindex = ctx->ingress_ifindex };
	struct frame_bytes f = {};
	__u32 one = 1, *n = bpf_map_lookup_elem(&rx_count, &k.ifindex);

	if (n) {
		k.slot = *n;
		*n += 1;
	} else {
		bpf_map_update_elem(&rx_count, &k.ifindex, &one, BPF_NOEXIST);
	}
	if (k.slot >= RX_LOG)
		return XDP_DROP;
	copy_frame(ctx, &f);
	bpf_map_update_elem(&rx_log, &k, &f, BPF_ANY);
	return XDP_DROP;
}

// tc_burst, on the sending veth's egress, turns each frame into cfg->burst
// copies sent back to back with bottom halves disabled (the clones are
// transmitted from inside the outer dev_queue_xmit), so that the receiving
// veth's NAPI poll finds them all in its ring and runs the main program over
// them as one batch, followed by one xdp_do_flush.
SEC("tc")
int tc_burst(struct __sk_buff *skb)
{
	__u32 zero = 0, i;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);

	if (!cfg || skb->mark == BURST_MARK)
		return TC_ACT_OK;
	skb->mark = BURST_MARK;
	for (i = 1; i < MAX_BURST; i++) {
		if (i >= cfg->burst)
			break;
		bpf_clone_redirect(skb, skb->ifindex, 0);
	}
	return TC_ACT_OK;
}

struct net_device {
	int ifindex;
} __attribute__((preserve_access_index));

// trace_devmap_xmit counts xdp:xdp_devmap_xmit, the tracepoint bq_xmit_all
// fires once per bulk-queue flush with the frames sent and dropped. A raw
// tracepoint needs no tracefs; its arguments are
// (from_dev, to_dev, sent, drops, …) on every kernel since 5.8.
SEC("raw_tracepoint/xdp_devmap_xmit")
int trace_devmap_xmit(struct bpf_raw_tracepoint_args *ctx)
{
	const struct net_device *from = (const void *)ctx->args[0];
	const struct net_device *to = (const void *)ctx->args[1];
	__u32 zero = 0, from_ifindex, to_ifindex, slot;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	struct state *st = bpf_map_lookup_elem(&state, &zero);
	struct flush *f;

	if (!cfg || !st)
		return 0;
	from_ifindex = BPF_CORE_READ(from, ifindex);
	to_ifindex = BPF_CORE_READ(to, ifindex);
	if (from_ifindex != cfg->ingress || !bpf_map_lookup_elem(&watch, &to_ifindex))
		return 0;
	slot = st->flushes & (FLUSHES - 1);
	st->flushes++;
	st->sent += (__s32)ctx->args[2];
	st->drops += (__s32)ctx->args[3];
	f = bpf_map_lookup_elem(&flushes, &slot);
	if (!f)
		return 0;
	f->to_ifindex = to_ifindex;
	f->sent = (__s32)ctx->args[2];
	f->drops = (__s32)ctx->args[3];
	f->seq = st->seq;
	return 0;
}

// probe_broadcast returns what bpf_redirect_map makes of BPF_F_BROADCAST:
// XDP_REDIRECT where the flag exists (5.14+), XDP_ABORTED where flags above
// the fallback action are refused.
SEC("xdp")
int probe_broadcast(struct xdp_md *ctx)
{
	return bpf_redirect_map(&devmap, 0, BPF_F_BROADCAST);
}

// Benchmark programs: the redirect alone, without the test's bookkeeping.
SEC("xdp")
int xdp_bench_redirect(struct xdp_md *ctx)
{
	return bpf_redirect_map(&devmap, 0, 0);
}

SEC("xdp/devmap")
int xdp_bench_devmap(struct xdp_md *ctx)
{
	return XDP_PASS;
}
