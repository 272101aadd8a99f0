// SPDX-License-Identifier: GPL-2.0
//go:build ignore

// Counts skb:kfree_skb by drop reason for one device: the device's ifindex
// and its network namespace's inode number, both set by the loader, tell it
// apart from every other device on the machine. Needs the kfree_skb
// tracepoint with a reason argument (Linux 5.17+); the loader only loads it
// after kernel BTF showed SKB_DROP_REASON_FULL_RING.

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// Only the fields read below; CO-RE relocates them against the running
// kernel's BTF, so the layout here does not matter.
struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct net {
	struct ns_common ns;
} __attribute__((preserve_access_index));

typedef struct {
	struct net *net;
} possible_net_t;

struct net_device {
	int ifindex;
	possible_net_t nd_net;
} __attribute__((preserve_access_index));

struct sk_buff {
	struct net_device *dev;
} __attribute__((preserve_access_index));

volatile const __s32 target_ifindex;
volatile const __u32 target_netns;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);   // enum skb_drop_reason
	__type(value, __u64); // drops
} drops SEC(".maps");

// trace_kfree_skb(struct sk_buff *skb, void *location,
//                 enum skb_drop_reason reason, ...)
SEC("tp_btf/kfree_skb")
int count_drop(unsigned long long *ctx)
{
	struct sk_buff *skb = (struct sk_buff *)ctx[0];
	__u32 reason = (__u32)ctx[2];
	struct net_device *dev = skb->dev;
	__u64 one = 1, *n;

	if (!dev || dev->ifindex != target_ifindex)
		return 0;
	if (dev->nd_net.net->ns.inum != target_netns)
		return 0;
	n = bpf_map_lookup_elem(&drops, &reason);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return 0;
	}
	bpf_map_update_elem(&drops, &reason, &one, BPF_NOEXIST);
	return 0;
}

char __license[] SEC("license") = "GPL";
