// SPDX-License-Identifier: GPL-2.0
//
// Seed 000's owner check: __tun_wake_queue() wakes a subqueue only for the
// tun_file that owns its slot (tun->tfiles[tfile->queue_index] == tfile).
// A queue detached with TUNSETQUEUE keeps its ring, its queue_index and its
// tun pointer until __tun_detach() purges the ring after synchronize_net();
// a reader of it consumes meanwhile, and without the check its wake would
// start the subqueue of the file that took the slot over, whose ring may be
// full: a tail-drop the seed is there to prevent.
//
// This program counts, for one tap, the calls of __tun_wake_queue() (one
// per frame a read(2) consumed, one per vhost-net batch), those made for a
// tun_file that did not own its slot at the call ("stale"), and the
// netif_tx_wake_queue() calls made inside a stale call ("woke"): the
// kernel must make none. The slot is read at entry; the kernel moves it
// under the same consumer lock its caller holds, so the entry's read is
// what the kernel's own check sees. A stale call is remembered by task
// until its exit; one that cannot be remembered is counted in "lost".
//
// The programs are kprobes and a kretprobe, which run with preemption
// disabled: fentry and fexit programs are preemptible on PREEMPT_RT, and
// the kernel skips one in a task that preempted another inside it (in a
// vhost race on 7.3-rt, 1-14 times). What a probe can still
// miss the kernel counts in its link, and the test reports it.
//
// tun's types live in its module's BTF, which CO-RE here does not read: the
// test reads their offsets there and sets them before loading.

#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "tap.h"

char __license[] SEC("license") = "GPL";

// owner_counts is what the programs tally, per CPU.
struct owner_counts {
	__u64 calls; // __tun_wake_queue() calls for the tap
	__u64 stale; // of them, for a tun_file that did not own its slot
	__u64 woke;  // netif_tx_wake_queue() calls inside a stale call
	__u64 lost;  // stale calls not remembered, or fields not read
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct owner_counts);
} owner_counts SEC(".maps");

// The tasks inside a stale call, by task_struct address.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u8);
} stale_tasks SEC(".maps");

// Offsets in tun's module BTF: of dev and tfiles in struct tun_struct, of
// queue_index in struct tun_file.
volatile const __u32 dev_off = 0;
volatile const __u32 tfiles_off = 0;
volatile const __u32 index_off = 0;

// MAX_TAP_QUEUES: tfiles' length.
#define MAX_QUEUES 256

static struct owner_counts *tally(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&owner_counts, &zero);
}

SEC("kprobe/__tun_wake_queue")
int BPF_KPROBE(owner_entry, void *tun, void *tfile)
{
	struct owner_counts *n = tally();
	struct net_device *dev;
	void *owner;
	__u16 index;
	__u64 task;
	__u8 one = 1;

	if (!n)
		return 0;
	if (bpf_probe_read_kernel(&dev, sizeof(dev), tun + dev_off) || !ours(dev))
		return 0;
	n->calls++;
	if (bpf_probe_read_kernel(&index, sizeof(index), tfile + index_off) || index >= MAX_QUEUES ||
	    bpf_probe_read_kernel(&owner, sizeof(owner), tun + tfiles_off + index * sizeof(void *))) {
		n->lost++;
		return 0;
	}
	if (owner == tfile)
		return 0;
	n->stale++;
	task = bpf_get_current_task();
	if (bpf_map_update_elem(&stale_tasks, &task, &one, BPF_ANY))
		n->lost++;
	return 0;
}

SEC("kretprobe/__tun_wake_queue")
int BPF_KRETPROBE(owner_exit)
{
	__u64 task = bpf_get_current_task();

	bpf_map_delete_elem(&stale_tasks, &task);
	return 0;
}

SEC("kprobe/netif_tx_wake_queue")
int BPF_KPROBE(owner_wake, struct netdev_queue *txq)
{
	struct owner_counts *n;
	__u64 task = bpf_get_current_task();

	if (!bpf_map_lookup_elem(&stale_tasks, &task) || !ours(BPF_CORE_READ(txq, dev)))
		return 0;
	n = tally();
	if (n)
		n->woke++;
	return 0;
}
