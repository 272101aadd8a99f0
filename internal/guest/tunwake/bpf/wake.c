// SPDX-License-Identifier: GPL-2.0
//
// Seed 000's race drops, explained: with IFF_BACKPRESSURE and a qdisc, a
// produce into the tap's ptr_ring can fail (tun_net_xmit() drops the frame,
// SKB_DROP_REASON_FULL_RING) only if the queue was running over a full ring.
// The producer stops the queue whenever its produce filled the ring, under
// the producer lock, and wakes it there only over a free slot; nothing but
// a consume frees one. So the queue runs over a full ring only after a wake
// that came while the ring was full: __tun_wake_queue() decided to wake
// (after a consume, seeing the queue stopped) and the producer refilled the
// ring and stopped the queue again before that wake cleared the stop. The
// wake then undoes the new stop, and the next frame is dropped, once: the
// failed produce finds the ring full and stops the queue again.
//
// This program counts, for one tap, the calls of netif_tx_wake_queue()
// (a consumer makes one only after it saw the queue stopped) and those
// after which the ring was full: the slot at the producer index taken. It
// reads at the function's exit, after the stop was cleared: if the ring
// was full when the wake cleared the stop, it is still full then, since
// the consumer holds the consumer lock throughout and nothing else frees
// a slot; the producer's own second look wakes only over a free slot,
// under the producer lock, so it never counts. Read at entry instead, a
// refill landing between the read and the clear went uncounted (a vhost
// race on a 2-slot ring dropped 5 frames with 4 counted).
// tun drops with backpressure must be no more than the full-ring wakes.
//
// The entry (a kprobe) keeps the call's queue by task for the exit (a
// kretprobe); both run with preemption disabled, unlike fexit on
// PREEMPT_RT, where the kernel skips a program in a task that preempted
// another inside it. What a probe can still miss the kernel counts in its
// link, and a call whose queue could not be kept counts in "unheld".
//
// tun's own types live in its module's BTF, which CO-RE here does not read:
// the test reads their offsets there and sets them before loading.

#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "tap.h"

char __license[] SEC("license") = "GPL";

// counts is what the program tallies, per CPU.
struct counts {
	__u64 wakes;  // calls of netif_tx_wake_queue() for the tap
	__u64 full;   // of them, with the ring full at exit
	__u64 unread; // wakes whose ring could not be read (not counted in full)
	__u64 unheld; // wakes whose queue could not be kept for the exit (not counted)
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counts);
} counts SEC(".maps");

// The tap's queue in each task inside netif_tx_wake_queue(), by
// task_struct address.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct netdev_queue *);
} in_wake SEC(".maps");

// Offsets in tun's module BTF: of tfiles in struct tun_struct (the
// device's private area), and of tx_ring.producer and tx_ring.queue in
// struct tun_file. The tap has one queue: tfiles[0].
volatile const __u32 tfiles_off = 0;
volatile const __u32 producer_off = 0;
volatile const __u32 queue_off = 0;

static struct counts *tally(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&counts, &zero);
}

SEC("kprobe/netif_tx_wake_queue")
int BPF_KPROBE(wake_enter, struct netdev_queue *txq)
{
	struct counts *n = tally();
	struct net_device *dev = BPF_CORE_READ(txq, dev);
	__u64 task = bpf_get_current_task();

	if (!n || !ours(dev))
		return 0;
	if (bpf_map_update_elem(&in_wake, &task, &txq, BPF_ANY))
		n->unheld++;
	return 0;
}

SEC("kretprobe/netif_tx_wake_queue")
int BPF_KRETPROBE(wake_exit)
{
	struct counts *n = tally();
	__u64 task = bpf_get_current_task();
	struct netdev_queue **kept = bpf_map_lookup_elem(&in_wake, &task);
	struct netdev_queue *txq;
	struct net_device *dev;
	void *priv, *tfile, *slot;
	void **queue;
	int producer;

	if (!kept)
		return 0;
	txq = *kept;
	bpf_map_delete_elem(&in_wake, &task);
	if (!n)
		return 0;
	dev = BPF_CORE_READ(txq, dev);
	n->wakes++;
	priv = (void *)dev + bpf_core_field_offset(struct net_device, priv);
	if (bpf_probe_read_kernel(&tfile, sizeof(tfile), priv + tfiles_off)) {
		n->unread++;
		return 0;
	}
	if (!tfile)
		return 0; // detached: no ring, nothing to drop on
	if (bpf_probe_read_kernel(&producer, sizeof(producer), tfile + producer_off) ||
	    bpf_probe_read_kernel(&queue, sizeof(queue), tfile + queue_off) ||
	    bpf_probe_read_kernel(&slot, sizeof(slot), queue + producer)) {
		n->unread++;
		return 0;
	}
	if (slot)
		n->full++;
	return 0;
}
