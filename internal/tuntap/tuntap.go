// Package tuntap opens tun/tap devices through /dev/net/tun and wraps the
// TUN* ioctls the suites need, so tests talk to the kernel's UAPI directly
// instead of through ip-tuntap.
package tuntap

// Flags of TUNSETIFF (include/uapi/linux/if_tun.h).
const (
	IFFTun          = 0x0001
	IFFTap          = 0x0002
	IFFNapi         = 0x0010
	IFFNapiFrags    = 0x0020
	IFFNoCarrier    = 0x0040
	IFFBackpressure = 0x0080 // Linux 7.3: stop the queue when the ring is full (seed 000)
	IFFNoPI         = 0x1000
	IFFOneQueue     = 0x2000
	IFFVnetHdr      = 0x4000
	IFFTunExcl      = 0x8000
	IFFMultiQueue   = 0x0100
	IFFAttachQueue  = 0x0200
	IFFDetachQueue  = 0x0400
	IFFPersist      = 0x0800
)
