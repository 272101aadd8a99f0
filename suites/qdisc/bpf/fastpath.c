// SPDX-License-Identifier: GPL-2.0
//
// Seed 003's fast path, observed: __netif_schedule(q) returns at once while
// q->defer_list holds a frame (a CPU inside __dev_xmit_skb() will run the
// queue); before the seed it sets __QDISC_STATE_SCHED and raises
// NET_TX_SOFTIRQ whenever SCHED was clear. For the root qdisc of one
// device, these programs sort the calls that found defer_list holding a
// frame and SCHED clear (candidates) by what the call did:
//
//   over:      scheduled q (a NET_TX raise on the call's CPU with SCHED now
//              set) while the frame at the list's head at entry was still
//              on the list: the list was never empty, so the function
//              cannot have read it empty; the fast path was not taken;
//   emptied:   scheduled q after that frame left the list: the function may
//              have read it empty, so the call says nothing;
//   declined:  did not schedule q, SCHED clear at exit and no other call
//              scheduled q meanwhile: the fast path was taken;
//   contested: did not schedule q because another call did.
//
// Frames are told apart by the suite's stream and sequence number, never
// by address: an skb freed and reused at the head is another frame.
//
// A call is __netif_schedule(q) or netif_tx_wake_queue(txq) on a stopped
// queue (Debian's 7.2 inlines the first into the second; 7.3 calls it, and
// the nested call counts once, read again at its entry, closer to the
// function's own read of the list). The two are counted apart: on a locked
// qdisc, __netif_schedule() from __qdisc_run() and dev_requeue_skb() runs
// with the qdisc lock held, which the sender of the list's first frame
// waits for before it empties the list, and without which nobody clears
// SCHED: such a call can be neither emptied nor, before the seed, declined.
// A wake-up (veth_poll) holds no lock.
//
// A call is followed from entry to exit by the task that makes it, never
// by CPU: on PREEMPT_RT without the softirq lock (7.3-rt), a task inside a
// call with BH disabled can be preempted by another that makes one on the
// same CPU. The entries and exits are kprobes and kretprobes, which run
// with preemption disabled: a fentry program is preemptible there, and the
// kernel skips the program in a task that preempted another inside it.
// What can still be missed (a probe hit inside another, a return without a
// free instance, a call whose task has no slot) is counted and reported.

#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define NET_TX_SOFTIRQ 2 // enum in include/linux/interrupt.h, unchanged since 2.6
#define WALK_MAX 1024    // defer_list nodes walked; the list stays under net.core.qdisc_max_burst (1000)

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

// class is one kind of call's tally (see the top of the file).
struct class {
	__u64 calls;      // calls on the device's qdisc
	__u64 candidates; // defer_list held a frame and SCHED was clear at entry
	__u64 over;       // candidates that scheduled q over a list never empty
	__u64 emptied;    // candidates that scheduled q after the entry's frame left the list
	__u64 declined;   // candidates that left q unscheduled, nobody else scheduling it
	__u64 contested;  // candidates that left q unscheduled because another call scheduled it
};

// counts is what the programs tally, per CPU.
struct counts {
	struct class locked; // __netif_schedule() called directly: the qdisc lock holder
	struct class wake;   // netif_tx_wake_queue() of a stopped queue
	__u64 raises;        // every NET_TX_SOFTIRQ raise, whatever raised it
	__u64 unread;        // lock holder's calls: frames at the head at entry that could not be read
	__u64 deep;          // walks of defer_list cut at WALK_MAX nodes
	__u64 vanished;      // wake-ups: frames at the head at entry that could not be read
	__u64 unheld;        // calls not followed: no slot for their task in the calls map
};

// call is the call in progress in a task.
struct call {
	__u64 q;        // the qdisc; 0: another device's, or a wake-up of a running queue
	__u64 frame[2]; // stream and sequence number of the frame at defer_list's head at entry
	__u64 gen;      // schedules of q (the gen map) at entry
	__u32 depth;    // nesting (netif_tx_wake_queue -> __netif_schedule)
	__u32 wake;     // entered through netif_tx_wake_queue()
	__u32 candidate;
	__u32 scheduled; // a NET_TX raise with SCHED set came during the call
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counts);
} counts SEC(".maps");

// calls holds the calls in progress, by task_struct address: pid 0 is
// every CPU's idle task, where softirqs run too.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct call);
} calls SEC(".maps");

// gen counts the calls, on any CPU, that scheduled q: a call that finds it
// changed at exit met another one.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} gen SEC(".maps");

// ifindex is the device whose root qdisc is watched; the test sets it
// before loading.
volatile const __u32 ifindex = 0;

static __always_inline int sched_set(struct Qdisc *q)
{
	return !!(BPF_CORE_READ(q, state) & (1UL << bpf_core_enum_value(enum qdisc_state_t, __QDISC_STATE_SCHED)));
}

// frame_id reads the stream and sequence number (bytes 18-29 of a
// traffic.Frame) of the skb whose ll_node is node into id; non-zero when
// the read failed.
static __always_inline long frame_id(__u64 node, __u64 id[2])
{
	struct sk_buff *skb = (struct sk_buff *)(node - bpf_core_field_offset(struct sk_buff, ll_node));
	unsigned char *data = BPF_CORE_READ(skb, data);

	id[0] = id[1] = 0;
	return bpf_probe_read_kernel(id, 12, data + 18);
}

// on_list reports whether the frame id is on q's defer_list.
static __always_inline int on_list(struct Qdisc *q, __u64 id[2], struct counts *n)
{
	struct llist_node *node = BPF_CORE_READ(q, defer_list.first);
	__u64 f[2];

	for (int i = 0; i < WALK_MAX; i++) {
		if (!node)
			return 0;
		if (frame_id((__u64)node, f))
			return 0; // freed under the walk: the list was emptied
		if (f[0] == id[0] && f[1] == id[1])
			return 1;
		node = BPF_CORE_READ(node, next);
	}
	n->deep++;
	return 0;
}

static __always_inline struct class *class_of(struct counts *n, struct call *c)
{
	return c->wake ? &n->wake : &n->locked;
}

// note reads what the function is about to read: whether defer_list holds
// a frame (and which) while SCHED is clear.
static __always_inline void note(struct call *c, struct Qdisc *q, struct counts *n)
{
	__u64 head = (__u64)BPF_CORE_READ(q, defer_list.first);

	c->candidate = head && !sched_set(q);
	if (c->candidate && frame_id(head, c->frame)) {
		// A wake-up holds no lock: the frame can leave the list and be
		// freed under the read, and the call then says nothing, as an
		// emptied one. The lock holder's list cannot empty under it, so
		// there an unread frame is the tracer's loss.
		if (c->wake)
			n->vanished++;
		else
			n->unread++;
		c->candidate = 0;
	}
}

// current_call is the calling task's call in progress, or 0.
static __always_inline struct call *current_call(void)
{
	__u64 task = bpf_get_current_task();

	return bpf_map_lookup_elem(&calls, &task);
}

static __always_inline void enter(struct Qdisc *q, int wake)
{
	__u32 zero = 0;
	struct counts *n = bpf_map_lookup_elem(&counts, &zero);
	__u64 *g = bpf_map_lookup_elem(&gen, &zero);
	__u64 task = bpf_get_current_task();
	struct call fresh = {}, *c;

	if (!n || !g)
		return;
	c = bpf_map_lookup_elem(&calls, &task);
	if (c) {
		// The wake-up's __netif_schedule(), where it is not inlined:
		// closer to the function's own read of the list.
		c->depth++;
		if (c->q && c->q == (__u64)q && !c->scheduled)
			note(c, q, n);
		return;
	}
	fresh.depth = 1;
	if (q && BPF_CORE_READ(q, dev_queue, dev, ifindex) == ifindex) {
		fresh.q = (__u64)q;
		fresh.wake = wake;
		fresh.gen = *g;
	}
	// Every call gets a slot, the device's or not, so that a nested one
	// is told from a first.
	if (bpf_map_update_elem(&calls, &task, &fresh, BPF_NOEXIST) || !(c = bpf_map_lookup_elem(&calls, &task))) {
		if (fresh.q)
			n->unheld++;
		return;
	}
	if (!c->q)
		return;
	class_of(n, c)->calls++;
	note(c, q, n);
}

static __always_inline void leave(void)
{
	__u32 zero = 0;
	struct counts *n = bpf_map_lookup_elem(&counts, &zero);
	__u64 *g = bpf_map_lookup_elem(&gen, &zero);
	__u64 task = bpf_get_current_task();
	struct call *c = bpf_map_lookup_elem(&calls, &task);
	struct class *k;

	if (!c || !n || !g)
		return;
	if (--c->depth > 0)
		return;
	if (c->q) {
		k = class_of(n, c);
		if (c->candidate)
			k->candidates++;
		if (c->candidate && !c->scheduled) {
			if (sched_set((struct Qdisc *)c->q) || *g != c->gen)
				k->contested++;
			else
				k->declined++;
		}
	}
	bpf_map_delete_elem(&calls, &task);
}

SEC("kprobe/__netif_schedule")
int BPF_KPROBE(schedule_enter, struct Qdisc *q)
{
	enter(q, 0);
	return 0;
}

SEC("kretprobe/__netif_schedule")
int BPF_KRETPROBE(schedule_exit)
{
	leave();
	return 0;
}

SEC("kprobe/netif_tx_wake_queue")
int BPF_KPROBE(wake_enter, struct netdev_queue *txq)
{
	struct Qdisc *q = 0;

	// Only a stopped queue goes on to __netif_schedule().
	if (BPF_CORE_READ(txq, state) & (1UL << bpf_core_enum_value(enum netdev_queue_state_t, __QUEUE_STATE_DRV_XOFF)))
		q = BPF_CORE_READ(txq, qdisc);
	enter(q, 1);
	return 0;
}

SEC("kretprobe/netif_tx_wake_queue")
int BPF_KRETPROBE(wake_exit)
{
	leave();
	return 0;
}

// A NET_TX raise in a task in a call on q, with SCHED now set, is the call
// scheduling q (__netif_reschedule() raises it with interrupts off).
SEC("tp_btf/softirq_raise")
int BPF_PROG(net_tx_raise, unsigned int vec)
{
	__u32 zero = 0;
	struct counts *n = bpf_map_lookup_elem(&counts, &zero);
	__u64 *g = bpf_map_lookup_elem(&gen, &zero);
	struct call *c;
	struct Qdisc *q;
	struct class *k;

	if (vec != NET_TX_SOFTIRQ || !n || !g)
		return 0;
	n->raises++;
	c = current_call();
	if (!c)
		return 0;
	q = (struct Qdisc *)c->q;
	if (!q || c->scheduled || !sched_set(q))
		return 0;
	c->scheduled = 1;
	__sync_fetch_and_add(g, 1);
	if (!c->candidate)
		return 0;
	k = class_of(n, c);
	if (on_list(q, c->frame, n))
		k->over++;
	else
		k->emptied++;
	return 0;
}
