// Package vhostnet is a userspace vhost-net "guest": it opens /dev/vhost-net,
// gives it one anonymous memory region and a split virtqueue each for RX and
// TX, attaches a tap as the backend and then plays the guest driver, posting
// receive buffers at a rate the test controls and reading the used ring (and
// transmitting frames into the tap). It lets the
// suites drive the vhost-net consumer side of a tap (vhost_net_buf_produce,
// tun_wake_queue) without a second VM. It knows nothing about tun semantics.
//
// The reference is the kernel's tools/virtio/vhost_net_test.c: the tap is
// IFF_TAP|IFF_NO_PI|IFF_VNET_HDR with TUNSETVNETHDRSZ 12, the guest
// negotiates VIRTIO_F_VERSION_1, so every receive buffer starts with a
// 12-byte struct virtio_net_hdr_mrg_rxbuf written by tun. Config.Features
// adds event indexes, indirect descriptors or mergeable receive buffers.
package vhostnet

import "fmt"

// HdrLen is the size of the virtio-net header in front of every frame: struct
// virtio_net_hdr_mrg_rxbuf, the header of VIRTIO_F_VERSION_1. Set it on the
// tap with tuntap.Device.SetVnetHdrSize.
const HdrLen = 12

// DefaultQueueSize is the RX virtqueue size (vhost_net_test.c's DESC_NUM).
const DefaultQueueSize = 256

// DefaultBufSize is the size of each receive buffer: a header and a frame of
// up to 1500+14 bytes, rounded up.
const DefaultBufSize = 2048

// Batch is how many entries vhost-net moves from the tap's ring into its own
// buffer at a time (VHOST_NET_BATCH in drivers/vhost/net.c).
const Batch = 64

// Virtqueue indexes of a vhost-net device (VHOST_NET_VQ_RX, VHOST_NET_VQ_TX).
const (
	QueueRX = 0
	QueueTX = 1
)

// Feature bits (include/uapi/linux/virtio_config.h, virtio_ring.h,
// virtio_net.h).
const (
	FeatureVersion1 = uint64(1) << 32 // VIRTIO_F_VERSION_1
	FeatureEventIdx = uint64(1) << 29 // VIRTIO_RING_F_EVENT_IDX
	FeatureIndirect = uint64(1) << 28 // VIRTIO_RING_F_INDIRECT_DESC
	FeatureMrgRxBuf = uint64(1) << 15 // VIRTIO_NET_F_MRG_RXBUF
)

// optionalFeatures are the features Config.Features may ask for.
const optionalFeatures = FeatureEventIdx | FeatureIndirect | FeatureMrgRxBuf

// Config sizes the guest.
type Config struct {
	// QueueSize is the number of RX descriptors, a power of two; 0 means
	// DefaultQueueSize.
	QueueSize int
	// BufSize is the size of each receive buffer; 0 means DefaultBufSize.
	// With FeatureMrgRxBuf a frame may span several buffers.
	BufSize int
	// Features are negotiated besides VIRTIO_F_VERSION_1: any of
	// FeatureEventIdx (the guest kicks and is signalled through
	// avail_event and used_event instead of flags), FeatureIndirect (every
	// buffer is posted through an indirect table of two descriptors, the
	// header and the rest) and FeatureMrgRxBuf (vhost may spread a frame
	// over num_buffers receive buffers; Net.Receive puts it together).
	Features uint64
}

func (c Config) withDefaults() Config {
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.BufSize == 0 {
		c.BufSize = DefaultBufSize
	}
	return c
}

// minBufSize is the smallest useful receive buffer: the header and a
// minimal Ethernet frame. vhost truncates what does not fit.
const minBufSize = HdrLen + 60

// minMrgBufSize is the smallest receive buffer with FeatureMrgRxBuf: the
// header and a byte of frame.
const minMrgBufSize = HdrLen + 1

// layout checks the configuration and lays out its ring.
func (c Config) layout() (Layout, error) {
	if extra := c.Features &^ optionalFeatures; extra != 0 {
		return Layout{}, fmt.Errorf("vhost: features %#x are not among those the guest implements (%#x)",
			extra, optionalFeatures)
	}
	switch {
	case c.Features&FeatureMrgRxBuf != 0 && c.BufSize < minMrgBufSize:
		return Layout{}, fmt.Errorf("vhost: buffer size %d is below %d (header and a byte of frame)",
			c.BufSize, minMrgBufSize)
	case c.Features&FeatureMrgRxBuf == 0 && c.BufSize < minBufSize:
		return Layout{}, fmt.Errorf("vhost: buffer size %d is below %d (header and a minimal frame)", c.BufSize, minBufSize)
	case c.Features&FeatureEventIdx != 0 && c.QueueSize < 2:
		return Layout{}, fmt.Errorf("vhost: event indexes need a queue of 2 or more, not %d", c.QueueSize)
	}
	return NewLayout(c.QueueSize)
}

// ioctl request numbers for x86-64 (include/uapi/linux/vhost.h); x/sys/unix
// does not have them.
const (
	ioctlGetFeatures   = 0x8008AF00 // _IOR(VHOST_VIRTIO, 0x00, __u64)
	ioctlSetFeatures   = 0x4008AF00 // _IOW(VHOST_VIRTIO, 0x00, __u64)
	ioctlSetOwner      = 0xAF01     // _IO(VHOST_VIRTIO, 0x01)
	ioctlSetMemTable   = 0x4008AF03 // _IOW(VHOST_VIRTIO, 0x03, struct vhost_memory)
	ioctlSetVringNum   = 0x4008AF10 // _IOW(VHOST_VIRTIO, 0x10, struct vhost_vring_state)
	ioctlSetVringAddr  = 0x4028AF11 // _IOW(VHOST_VIRTIO, 0x11, struct vhost_vring_addr)
	ioctlSetVringBase  = 0x4008AF12 // _IOW(VHOST_VIRTIO, 0x12, struct vhost_vring_state)
	ioctlSetVringKick  = 0x4008AF20 // _IOW(VHOST_VIRTIO, 0x20, struct vhost_vring_file)
	ioctlSetVringCall  = 0x4008AF21 // _IOW(VHOST_VIRTIO, 0x21, struct vhost_vring_file)
	ioctlSetBusyloop   = 0x4008AF23 // _IOW(VHOST_VIRTIO, 0x23, struct vhost_vring_state)
	ioctlNetSetBackend = 0x4008AF30 // _IOW(VHOST_VIRTIO, 0x30, struct vhost_vring_file)
)

// memoryTable is a struct vhost_memory with exactly one region:
//
//	struct vhost_memory_region {
//		__u64 guest_phys_addr;
//		__u64 memory_size; /* bytes */
//		__u64 userspace_addr;
//		__u64 flags_padding; /* No flags are currently specified. */
//	};
//	struct vhost_memory {
//		__u32 nregions;
//		__u32 padding;
//		struct vhost_memory_region regions[];
//	};
type memoryTable struct {
	NRegions      uint32
	Padding       uint32
	GuestPhysAddr uint64
	MemorySize    uint64
	UserspaceAddr uint64
	FlagsPadding  uint64
}

// vringState is
//
//	struct vhost_vring_state {
//		unsigned int index;
//		unsigned int num;
//	};
type vringState struct {
	Index uint32
	Num   uint32
}

// vringFile is
//
//	struct vhost_vring_file {
//		unsigned int index;
//		int fd; /* Pass -1 to unbind from file. */
//	};
type vringFile struct {
	Index uint32
	FD    int32
}

// vringAddr is
//
//	struct vhost_vring_addr {
//		unsigned int index;
//		unsigned int flags;
//		__u64 desc_user_addr;
//		__u64 used_user_addr;
//		__u64 avail_user_addr;
//		__u64 log_guest_addr;
//	};
type vringAddr struct {
	Index         uint32
	Flags         uint32
	DescUserAddr  uint64
	UsedUserAddr  uint64
	AvailUserAddr uint64
	LogGuestAddr  uint64
}
