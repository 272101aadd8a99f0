// SPDX-License-Identifier: GPL-2.0
//
// What bpf/wake.c and bpf/owner.c share: the kernel types they read (CO-RE
// relocates each member they touch) and the tap they follow, its ifindex
// and its namespace's inode, set by the test before loading.

#ifndef TUNWAKE_TAP_H
#define TUNWAKE_TAP_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

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
	unsigned char priv[];
} __attribute__((preserve_access_index));

struct netdev_queue {
	struct net_device *dev;
	unsigned long state;
} __attribute__((preserve_access_index));

// The tap: its ifindex and its namespace's inode.
volatile const __u32 ifindex = 0;
volatile const __u32 netns = 0;

// ours tells whether dev is the tap.
static __always_inline int ours(struct net_device *dev)
{
	return BPF_CORE_READ(dev, ifindex) == ifindex && BPF_CORE_READ(dev, nd_net.net, ns.inum) == netns;
}

#endif
