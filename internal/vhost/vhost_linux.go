package vhost

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// Net is one vhost-net device driven from userspace. Its RX virtqueue and
// receive buffers live in one anonymous mmap, not in the Go heap: the kernel
// writes there behind the garbage collector's back, and the ring must be
// page aligned. That mmap is the device's only memory region, mapped 1:1
// (guest address == userspace address).
type Net struct {
	// RX is the receive virtqueue (tap → guest).
	RX *Ring

	fd     int
	region []byte
	kick   int // eventfd the guest writes to notify vhost of new buffers
	call   int // eventfd vhost signals when it has used buffers
}

// Open opens /dev/vhost-net and sets up the RX virtqueue (VHOST_SET_OWNER,
// VIRTIO_F_VERSION_1, one memory region, ring addresses, kick and call
// eventfds). No backend is attached yet: see SetBackend. A kernel without
// vhost-net gives an error matching feature.ErrNotSupported.
func Open(cfg Config) (*Net, error) {
	cfg = cfg.withDefaults()
	l, err := cfg.layout()
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open("/dev/vhost-net", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO) {
		return nil, feature.Unsupported("vhost-net", "open /dev/vhost-net: %v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("open /dev/vhost-net: %w (run as root)", err)
	}
	n := &Net{fd: fd, kick: -1, call: -1}
	if err := n.setup(l, cfg.BufSize); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func (n *Net) setup(l Layout, bufSize int) error {
	if err := n.ioctl(ioctlSetOwner, nil, "VHOST_SET_OWNER"); err != nil {
		return err
	}
	var have uint64
	if err := n.ioctl(ioctlGetFeatures, unsafe.Pointer(&have), "VHOST_GET_FEATURES"); err != nil {
		return err
	}
	if have&FeatureVersion1 == 0 {
		return fmt.Errorf("vhost-net offers features %#x without VIRTIO_F_VERSION_1: the 12-byte header needs it", have)
	}
	want := FeatureVersion1
	if err := n.ioctl(ioctlSetFeatures, unsafe.Pointer(&want), "VHOST_SET_FEATURES"); err != nil {
		return err
	}

	bufOff := alignUp(l.Size, ringAlign)
	size := alignUp(bufOff+l.Num*bufSize, ringAlign)
	region, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap %d bytes for the guest memory: %w", size, err)
	}
	n.region = region
	base := uint64(uintptr(unsafe.Pointer(&region[0])))
	mem := memoryTable{NRegions: 1, GuestPhysAddr: base, MemorySize: uint64(size), UserspaceAddr: base}
	if err := n.ioctl(ioctlSetMemTable, unsafe.Pointer(&mem), "VHOST_SET_MEM_TABLE"); err != nil {
		return err
	}
	r, err := newRing(l, region[:bufOff], region[bufOff:], bufSize, base+uint64(bufOff))
	if err != nil {
		return err
	}
	n.RX = r

	st := vringState{Index: QueueRX, Num: uint32(l.Num)}
	if err := n.ioctl(ioctlSetVringNum, unsafe.Pointer(&st), "VHOST_SET_VRING_NUM"); err != nil {
		return err
	}
	st.Num = 0
	if err := n.ioctl(ioctlSetVringBase, unsafe.Pointer(&st), "VHOST_SET_VRING_BASE"); err != nil {
		return err
	}
	addr := vringAddr{
		Index:         QueueRX,
		DescUserAddr:  base + uint64(l.Desc),
		AvailUserAddr: base + uint64(l.Avail),
		UsedUserAddr:  base + uint64(l.Used),
	}
	if err := n.ioctl(ioctlSetVringAddr, unsafe.Pointer(&addr), "VHOST_SET_VRING_ADDR"); err != nil {
		return err
	}
	if n.kick, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	if n.call, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	kf := vringFile{Index: QueueRX, FD: int32(n.kick)}
	if err := n.ioctl(ioctlSetVringKick, unsafe.Pointer(&kf), "VHOST_SET_VRING_KICK"); err != nil {
		return err
	}
	cf := vringFile{Index: QueueRX, FD: int32(n.call)}
	return n.ioctl(ioctlSetVringCall, unsafe.Pointer(&cf), "VHOST_SET_VRING_CALL")
}

// SetBackend attaches a tap queue file as the RX backend
// (VHOST_NET_SET_BACKEND). vhost takes its own reference to the file.
func (n *Net) SetBackend(tap syscall.Conn) error {
	rc, err := tap.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) { ierr = n.setBackend(int32(fd)) }); err != nil {
		return err
	}
	return ierr
}

// DetachBackend detaches the RX backend (VHOST_NET_SET_BACKEND with fd -1):
// vhost gives the entries it holds back to the tap's ring.
func (n *Net) DetachBackend() error { return n.setBackend(-1) }

func (n *Net) setBackend(fd int32) error {
	f := vringFile{Index: QueueRX, FD: fd}
	return n.ioctl(ioctlNetSetBackend, unsafe.Pointer(&f), "VHOST_NET_SET_BACKEND")
}

// Kick tells vhost that new RX buffers are available.
func (n *Net) Kick() error {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], 1)
	if _, err := unix.Write(n.kick, b[:]); err != nil && !errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("kick eventfd: %w", err)
	}
	return nil
}

// Post posts up to k empty RX buffers and kicks vhost if it asked for it.
// It returns how many buffers it posted.
func (n *Net) Post(k int) (int, error) {
	posted := n.RX.PostWritable(k)
	if posted > 0 && n.RX.NeedsKick() {
		return posted, n.Kick()
	}
	return posted, nil
}

// WaitCall waits at most timeout for vhost to signal the call eventfd and
// clears it. It reports whether the signal came.
func (n *Net) WaitCall(timeout time.Duration) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(n.call), Events: unix.POLLIN}}
	for {
		k, err := unix.Poll(fds, int(timeout.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("poll call eventfd: %w", err)
		}
		if k == 0 {
			return false, nil
		}
		var b [8]byte
		if _, err := unix.Read(n.call, b[:]); err != nil && !errors.Is(err, unix.EAGAIN) {
			return false, fmt.Errorf("read call eventfd: %w", err)
		}
		return true, nil
	}
}

// Close closes the vhost device first (the kernel stops touching the
// memory and gives held entries back to the tap), then the eventfds and the
// memory region. It is safe to call once.
func (n *Net) Close() error {
	var errs []error
	if n.fd >= 0 {
		errs = append(errs, unix.Close(n.fd))
		n.fd = -1
	}
	for _, fd := range []*int{&n.kick, &n.call} {
		if *fd >= 0 {
			errs = append(errs, unix.Close(*fd))
			*fd = -1
		}
	}
	if n.region != nil {
		errs = append(errs, unix.Munmap(n.region))
		n.region = nil
		n.RX = nil
	}
	return errors.Join(errs...)
}

func (n *Net) ioctl(req uintptr, arg unsafe.Pointer, name string) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(n.fd), req, uintptr(arg))
	if e != 0 {
		return fmt.Errorf("%s: %w", name, e)
	}
	return nil
}
