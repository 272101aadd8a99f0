// Package dropmon counts the frames the kernel frees with skb:kfree_skb,
// by drop reason, optionally only those of one device in one network
// namespace. Frames freed before a qdisc with QDISC_BURST_DROP (7.2+), or
// by a device with FULL_RING, show up in no link or qdisc counter (or in one
// that cannot tell the reasons apart): a ledger needs them from here.
//
// Reason values are read from the running kernel's BTF `enum
// skb_drop_reason` (releases renumber it, so no constant is safe). A kernel
// without the enum (before 5.17, e.g. 5.10) has no reason argument on the
// tracepoint: Attach and Reason return a feature.Unsupported error. A kernel
// without BTF is an error: every kernel the suites run on has it.
package dropmon

// Filter picks the drops a Monitor counts. The zero Filter counts every
// drop on the machine.
type Filter struct {
	// Ifindex, when not 0, counts only frames whose skb->dev has it.
	Ifindex int
	// NetnsInode, when not 0, counts only frames whose skb->dev lives in
	// the network namespace with this nsfs inode (see NetnsInode).
	NetnsInode uint64
}
