// SPDX-License-Identifier: GPL-2.0
//
// defer_list batches, counted (seed 003's owner). A sender whose frame
// finds a locked qdisc's q->defer_list empty owns the list: it takes the
// qdisc lock, takes every frame queued meanwhile (llist_del_all), enqueues
// them and must run the qdisc; the senders whose frames joined the list
// returned at once, trusting it to. For the root qdisc of one device,
// these programs count the frames each __dev_queue_xmit() call enqueued
// (tracepoint qdisc:qdisc_enqueue): a call that enqueued two or more ran
// a batch of the list, which only an owner does. A call is followed by
// the task that makes it (kprobe and kretprobe), as in fastpath.c: on
// PREEMPT_RT it can be preempted by another task on its CPU.

#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define SIZES 8 // batch sizes counted apart: 1 .. SIZES-1, and SIZES or more

char __license[] SEC("license") = "GPL";

struct net_device {
	int ifindex;
} __attribute__((preserve_access_index));

struct netdev_queue {
	struct net_device *dev;
} __attribute__((preserve_access_index));

struct Qdisc;
struct sk_buff;

// counts is what the programs tally, per CPU.
struct counts {
	__u64 calls;         // __dev_queue_xmit() calls that enqueued a frame on the device's qdisc
	__u64 size[SIZES + 1]; // calls by frames enqueued (size[SIZES]: SIZES or more); size[0] unused
	__u64 unheld;        // enqueues in a call not followed: no slot for its task
	__u64 enqueues;      // every enqueue on the device's qdisc
	__u64 stale;         // calls that found their task's slot taken: nested, or a return was missed
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counts);
} counts SEC(".maps");

// calls holds, by task_struct address, the frames enqueued by each
// __dev_queue_xmit() call in progress, and its nesting depth.
struct call {
	__u32 depth;
	__u32 enqueued;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct call);
} calls SEC(".maps");

// last is the size of the last call that enqueued on the device, on any
// CPU: what the qdisc was left with when the senders went quiet.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} last SEC(".maps");

// ifindex is the device whose root qdisc is watched; the test sets it
// before loading.
volatile const __u32 ifindex = 0;

SEC("kprobe/__dev_queue_xmit")
int BPF_KPROBE(xmit_enter)
{
	__u32 zero = 0;
	__u64 task = bpf_get_current_task();
	struct call fresh = {.depth = 1}, *c = bpf_map_lookup_elem(&calls, &task);
	struct counts *n = bpf_map_lookup_elem(&counts, &zero);

	if (c) {
		c->depth++;
		if (n)
			n->stale++;
		return 0;
	}
	if (bpf_map_update_elem(&calls, &task, &fresh, BPF_NOEXIST) && n)
		n->unheld++;
	return 0;
}

SEC("kretprobe/__dev_queue_xmit")
int BPF_KRETPROBE(xmit_exit)
{
	__u32 zero = 0;
	__u64 task = bpf_get_current_task();
	struct call *c = bpf_map_lookup_elem(&calls, &task);
	struct counts *n = bpf_map_lookup_elem(&counts, &zero);
	__u64 *l = bpf_map_lookup_elem(&last, &zero);
	__u32 size;

	if (!c || --c->depth > 0)
		return 0;
	size = c->enqueued;
	bpf_map_delete_elem(&calls, &task);
	if (!n || !l || size == 0)
		return 0;
	n->calls++;
	n->size[size < SIZES ? size : SIZES]++;
	*l = size;
	return 0;
}

SEC("tp_btf/qdisc_enqueue")
int BPF_PROG(enqueue, struct Qdisc *q, const struct netdev_queue *txq, struct sk_buff *skb)
{
	__u32 zero = 0;
	__u64 task = bpf_get_current_task();
	struct counts *n = bpf_map_lookup_elem(&counts, &zero);
	struct call *c;

	if (!txq || BPF_CORE_READ(txq, dev, ifindex) != ifindex)
		return 0;
	if (n)
		n->enqueues++;
	c = bpf_map_lookup_elem(&calls, &task);
	if (!c) {
		if (n)
			n->unheld++;
		return 0;
	}
	c->enqueued++;
	return 0;
}
