// SPDX-License-Identifier: GPL-2.0
//
// Seed 003's fast path, observed: __netif_schedule(q) returns at once while
// q->defer_list is not empty (a CPU inside __dev_xmit_skb() will run the
// queue). These programs count, for the qdisc of one device, the calls that
// found defer_list non-empty, and those of them that still scheduled the
// qdisc: set __QDISC_STATE_SCHED and raised NET_TX_SOFTIRQ. A kernel with
// the fast path never does that; one without it does whenever SCHED was
// clear.
//
// A call is __netif_schedule(q), or netif_tx_wake_queue(txq) on a stopped
// queue: Debian's 7.2 inlines __netif_schedule() into its callers in
// net/core/dev.c, netif_tx_wake_queue() among them, so the wake-ups from a
// veth peer's NAPI poll never reach the out-of-line function there; 7.3
// calls it, and the nested call counts once. __qdisc_run() and
// dev_requeue_skb() (sch_generic.c, the qdisc lock holder) always call the
// out-of-line function.
//
// Entry notes q, q->defer_list.first, the frame that head carries (the
// suite's stream and sequence number) and whether SCHED was clear. A NET_TX
// raise on the same CPU before the call returns, with SCHED now set, is the
// call scheduling q (__netif_reschedule() raises it with interrupts off). It
// counts against the fast path only if defer_list still has the same frame
// at its head: then the list was not empty when the function read it. The
// head's address alone does not prove that: a vCPU that stalls between the
// entry and the read (a host under load stops TCG's vCPU threads for
// milliseconds) lets the list be emptied, its skb sent and freed, and the
// memory come back as a new skb pushed at the head (seen once, as 1 of 300
// calls, in a 10-round soak of debian:7.3 under a kernel build). A call that
// scheduled after the head changed is counted apart: the function may have
// read the list empty (2-18% of the non-empty calls did so on Debian's 7.2
// and 7.3, which have the fast path).
//
// The calls the suite's load makes run with BH disabled (the NAPI poll, the
// qdisc lock holder), so a call's entry and exit happen on one CPU with
// nothing but interrupts between them; the per-CPU call slot relies on that.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define NET_TX_SOFTIRQ 2 // enum in include/linux/interrupt.h, unchanged since 2.6

char __license[] SEC("license") = "GPL";

// The kernel's types, reduced to the members read; CO-RE relocates each
// access against the running kernel's BTF.
struct llist_node {
	struct llist_node *next;
} __attribute__((preserve_access_index));

struct llist_head {
	struct llist_node *first;
} __attribute__((preserve_access_index));

struct net_device {
	int ifindex;
} __attribute__((preserve_access_index));

struct netdev_queue {
	struct net_device *dev;
	struct Qdisc *qdisc;
	unsigned long state;
} __attribute__((preserve_access_index));

struct Qdisc {
	struct netdev_queue *dev_queue;
	unsigned long state;
	struct llist_head defer_list;
} __attribute__((preserve_access_index));

struct sk_buff {
	struct llist_node ll_node;
	unsigned char *data;
} __attribute__((preserve_access_index));

enum qdisc_state_t { __QDISC_STATE_SCHED };
enum netdev_queue_state_t { __QUEUE_STATE_DRV_XOFF };

// counts is what the programs tally, per CPU.
struct counts {
	__u64 calls;          // calls on the device's qdisc
	__u64 wakes;          // of them, through netif_tx_wake_queue()
	__u64 nonempty;       // of them, q->defer_list non-empty at entry
	__u64 nonempty_wakes; // of those, through netif_tx_wake_queue()
	__u64 unscheduled;    // of the non-empty ones, SCHED clear: without the fast path they schedule q
	__u64 scheduled;      // calls that scheduled q: SCHED clear at entry, NET_TX raised, SCHED set
	__u64 despite;        // of them, defer_list non-empty at entry and the same head at the raise
	__u64 changed;        // of them, non-empty at entry but another frame (or none) at the head at the raise
	__u64 raises;         // every NET_TX_SOFTIRQ raise, whatever raised it
	__u64 unread;         // frames at the head whose stream and sequence number could not be read
};

// call is the call in progress on a CPU.
struct call {
	__u64 q;     // the qdisc; 0: another device's, or a wake-up of a running queue
	__u64 head;  // q->defer_list.first at entry
	__u64 frame[2]; // the stream and sequence number of head's frame
	__u32 depth; // nesting (netif_tx_wake_queue -> __netif_schedule)
	__u32 clear; // SCHED was clear at entry, and the call has not scheduled q yet
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counts);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct call);
} calls SEC(".maps");

// ifindex is the device whose root qdisc is watched; the test sets it
// before loading.
volatile const __u32 ifindex = 0;

static __always_inline unsigned long sched_bit(void)
{
	return 1UL << bpf_core_enum_value(enum qdisc_state_t, __QDISC_STATE_SCHED);
}

// frame_id reads the stream and sequence number (bytes 18-29 of a
// traffic.Frame) of the skb whose ll_node is node, into id, and counts a
// read that failed in n->unread (the test wants none).
static __always_inline void frame_id(__u64 node, __u64 id[2], struct counts *n)
{
	struct sk_buff *skb = (struct sk_buff *)(node - bpf_core_field_offset(struct sk_buff, ll_node));
	unsigned char *data = BPF_CORE_READ(skb, data);

	id[0] = id[1] = 0;
	if (bpf_probe_read_kernel(id, 12, data + 18))
		n->unread++;
}

static __always_inline void enter(struct Qdisc *q, int wake)
{
	__u32 zero = 0;
	struct call *c = bpf_map_lookup_elem(&calls, &zero);
	struct counts *n = bpf_map_lookup_elem(&counts, &zero);

	if (!c || !n)
		return;
	if (c->depth++ > 0)
		return;
	c->q = 0;
	if (!q || BPF_CORE_READ(q, dev_queue, dev, ifindex) != ifindex)
		return;
	c->q = (__u64)q;
	c->head = (__u64)BPF_CORE_READ(q, defer_list.first);
	if (c->head)
		frame_id(c->head, c->frame, n);
	c->clear = !(BPF_CORE_READ(q, state) & sched_bit());
	n->calls++;
	if (wake)
		n->wakes++;
	if (c->head) {
		n->nonempty++;
		if (wake)
			n->nonempty_wakes++;
		if (c->clear)
			n->unscheduled++;
	}
}

static __always_inline void leave(void)
{
	__u32 zero = 0;
	struct call *c = bpf_map_lookup_elem(&calls, &zero);

	if (!c || c->depth == 0)
		return;
	if (--c->depth == 0)
		c->q = 0;
}

SEC("fentry/__netif_schedule")
int BPF_PROG(schedule_enter, struct Qdisc *q)
{
	enter(q, 0);
	return 0;
}

SEC("fexit/__netif_schedule")
int BPF_PROG(schedule_exit, struct Qdisc *q)
{
	leave();
	return 0;
}

SEC("fentry/netif_tx_wake_queue")
int BPF_PROG(wake_enter, struct netdev_queue *txq)
{
	struct Qdisc *q = 0;

	// Only a stopped queue goes on to __netif_schedule().
	if (BPF_CORE_READ(txq, state) & (1UL << bpf_core_enum_value(enum netdev_queue_state_t, __QUEUE_STATE_DRV_XOFF)))
		q = BPF_CORE_READ(txq, qdisc);
	enter(q, 1);
	return 0;
}

SEC("fexit/netif_tx_wake_queue")
int BPF_PROG(wake_exit, struct netdev_queue *txq)
{
	leave();
	return 0;
}

SEC("tp_btf/softirq_raise")
int BPF_PROG(net_tx_raise, unsigned int vec)
{
	__u32 zero = 0;
	struct counts *n = bpf_map_lookup_elem(&counts, &zero);
	struct call *c = bpf_map_lookup_elem(&calls, &zero);
	struct Qdisc *q;
	__u64 head, frame[2];

	if (vec != NET_TX_SOFTIRQ || !n || !c)
		return 0;
	n->raises++;
	if (!c->q || !c->clear)
		return 0;
	q = (struct Qdisc *)c->q;
	if (!(BPF_CORE_READ(q, state) & sched_bit()))
		return 0;
	c->clear = 0;
	n->scheduled++;
	if (!c->head)
		return 0;
	head = (__u64)BPF_CORE_READ(q, defer_list.first);
	if (head == c->head) {
		frame_id(head, frame, n);
		if (frame[0] == c->frame[0] && frame[1] == c->frame[1]) {
			n->despite++;
			return 0;
		}
	}
	n->changed++;
	return 0;
}
