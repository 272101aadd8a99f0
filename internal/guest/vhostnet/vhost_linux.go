package vhostnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/nopreempt"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// Net is one vhost-net device driven from userspace. Its two virtqueues
// and their buffers live in one anonymous mmap, not in the Go heap: the
// kernel writes there behind the garbage collector's back, and the rings
// must be page aligned. That mmap is the device's only memory region, mapped
// 1:1 (guest address == userspace address).
type Net struct {
	// RX is the receive virtqueue (tap → guest), TX the transmit one
	// (guest → tap).
	RX, TX *Ring

	fd     int
	region []byte
	kick   [2]int  // eventfds the guest writes to notify vhost, per queue
	call   [2]int  // eventfds vhost signals when it used buffers, per queue
	merge  *merger // with FeatureMrgRxBuf: frames spread over RX buffers
}

// Open opens /dev/vhost-net and sets up both virtqueues (VHOST_SET_OWNER,
// VIRTIO_F_VERSION_1 and cfg.Features, one memory region, ring addresses,
// kick and call eventfds). No backend is attached yet: see SetBackend. A
// kernel without vhost-net gives an error matching feature.ErrNotSupported.
func Open(cfg Config) (*Net, error) {
	defer profile.Running(profile.Setup).End()
	cfg = cfg.withDefaults()
	l, err := cfg.layout()
	if err != nil {
		return nil, err
	}
	fd, err := openDevice()
	if err != nil {
		return nil, err
	}
	n := &Net{fd: fd, kick: [2]int{-1, -1}, call: [2]int{-1, -1}}
	if err := n.setup(l, cfg); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// Probe returns nil when the kernel has vhost-net (/dev/vhost-net opens),
// an error matching feature.ErrNotSupported when it has not.
func Probe() error {
	fd, err := openDevice()
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// openDevice opens /dev/vhost-net; a kernel without it gives an error
// matching feature.ErrNotSupported.
func openDevice() (int, error) {
	fd, err := unix.Open("/dev/vhost-net", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO) {
		return -1, feature.Unsupported(feature.VhostNet, "open /dev/vhost-net: %v", err)
	}
	if err != nil {
		return -1, fmt.Errorf("open /dev/vhost-net: %w (run as root)", err)
	}
	return fd, nil
}

func (n *Net) setup(l Layout, cfg Config) error {
	// Its worker is made by copy_process, which a pending signal stops:
	// see internal/guest/nopreempt.
	if err := nopreempt.Do(func() error { return n.ioctl(ioctlSetOwner, nil, "VHOST_SET_OWNER") }); err != nil {
		return err
	}
	want, err := n.negotiate(cfg.Features)
	if err != nil {
		return err
	}
	if want&FeatureMrgRxBuf != 0 {
		n.merge = &merger{}
	}
	return n.setupMemory(l, cfg.BufSize, want)
}

// negotiate sets VIRTIO_F_VERSION_1 and features, which vhost must offer,
// and returns what it set.
func (n *Net) negotiate(features uint64) (uint64, error) {
	var have uint64
	if err := n.ioctl(ioctlGetFeatures, unsafe.Pointer(&have), "VHOST_GET_FEATURES"); err != nil {
		return 0, err
	}
	if have&FeatureVersion1 == 0 {
		return 0, fmt.Errorf("vhost-net offers features %#x without VIRTIO_F_VERSION_1: the 12-byte header needs it", have)
	}
	want := FeatureVersion1 | features
	if missing := want &^ have; missing != 0 {
		return 0, fmt.Errorf("vhost-net offers features %#x without %#x", have, missing)
	}
	return want, n.ioctl(ioctlSetFeatures, unsafe.Pointer(&want), "VHOST_SET_FEATURES")
}

// setupMemory maps the device's one memory region, tells vhost about it and
// places both virtqueues in it. The region holds the RX ring, the TX ring,
// the RX buffers, the TX buffers, and with FeatureIndirect the RX and TX
// indirect tables, each page aligned.
func (n *Net) setupMemory(l Layout, bufSize int, features uint64) error {
	ringSize := alignUp(l.Size, ringAlign)
	bufsSize := alignUp(l.Num*bufSize, ringAlign)
	tablesSize := 0
	if features&FeatureIndirect != 0 {
		tablesSize = alignUp(l.Num*indirectSize, ringAlign)
	}
	size := 2*ringSize + 2*bufsSize + 2*tablesSize
	region, err := unix.Mmap(-1, 0, size,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap %d bytes for the guest memory: %w", size, err)
	}
	n.region = region
	base := uint64(uintptr(unsafe.Pointer(&region[0])))
	mem := memoryTable{NRegions: 1, GuestPhysAddr: base, MemorySize: uint64(size), UserspaceAddr: base}
	if err := n.ioctl(ioctlSetMemTable, unsafe.Pointer(&mem), "VHOST_SET_MEM_TABLE"); err != nil {
		return err
	}
	rings := [2]**Ring{&n.RX, &n.TX}
	for _, q := range []int{QueueRX, QueueTX} {
		ringOff, bufOff := q*ringSize, 2*ringSize+q*bufsSize
		r, err := newRing(l, region[ringOff:ringOff+ringSize], region[bufOff:bufOff+bufsSize], bufSize, base+uint64(bufOff))
		if err != nil {
			return err
		}
		r.eventIdx = features&FeatureEventIdx != 0
		if tablesSize > 0 {
			off := 2*ringSize + 2*bufsSize + q*tablesSize
			r.indirect, r.indirectAddr = region[off:off+tablesSize], base+uint64(off)
		}
		if err := n.setupQueue(q, r, base+uint64(ringOff)); err != nil {
			return err
		}
		*rings[q] = r
	}
	return nil
}

// setupQueue tells vhost where virtqueue q lives (ring at guest address
// addr) and gives it its kick and call eventfds.
func (n *Net) setupQueue(q int, r *Ring, addr uint64) error {
	st := vringState{Index: uint32(q), Num: uint32(r.Num)}
	if err := n.ioctl(ioctlSetVringNum, unsafe.Pointer(&st), "VHOST_SET_VRING_NUM"); err != nil {
		return err
	}
	st.Num = 0
	if err := n.ioctl(ioctlSetVringBase, unsafe.Pointer(&st), "VHOST_SET_VRING_BASE"); err != nil {
		return err
	}
	va := vringAddr{
		Index:         uint32(q),
		DescUserAddr:  addr + uint64(r.Desc),
		AvailUserAddr: addr + uint64(r.Avail),
		UsedUserAddr:  addr + uint64(r.Used),
	}
	if err := n.ioctl(ioctlSetVringAddr, unsafe.Pointer(&va), "VHOST_SET_VRING_ADDR"); err != nil {
		return err
	}
	var err error
	if n.kick[q], err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	if n.call[q], err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	kf := vringFile{Index: uint32(q), FD: int32(n.kick[q])}
	if err := n.ioctl(ioctlSetVringKick, unsafe.Pointer(&kf), "VHOST_SET_VRING_KICK"); err != nil {
		return err
	}
	cf := vringFile{Index: uint32(q), FD: int32(n.call[q])}
	return n.ioctl(ioctlSetVringCall, unsafe.Pointer(&cf), "VHOST_SET_VRING_CALL")
}

// SetBackend attaches a tap queue file as the backend of both virtqueues
// (VHOST_NET_SET_BACKEND), as qemu does. vhost takes its own reference to
// the file.
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

// DetachBackend detaches the backend of both virtqueues
// (VHOST_NET_SET_BACKEND with fd -1): vhost gives the entries it holds back
// to the tap's ring.
func (n *Net) DetachBackend() error { return n.setBackend(-1) }

func (n *Net) setBackend(fd int32) error {
	for _, q := range []uint32{QueueRX, QueueTX} {
		f := vringFile{Index: q, FD: fd}
		if err := n.ioctl(ioctlNetSetBackend, unsafe.Pointer(&f), "VHOST_NET_SET_BACKEND"); err != nil {
			return fmt.Errorf("queue %d: %w", q, err)
		}
	}
	return nil
}

// SetBusyPoll makes vhost, when it finds the backend's ring empty, poll
// it for up to us microseconds (VHOST_SET_VRING_BUSYLOOP_TIMEOUT on the RX
// virtqueue, what qemu's poll-us sets) before it sleeps until the tap's
// sk_data_ready; 0 turns polling off. The worker stops polling early when
// its CPU has other work.
func (n *Net) SetBusyPoll(us uint32) error {
	st := vringState{Index: QueueRX, Num: us}
	return n.ioctl(ioctlSetBusyloop, unsafe.Pointer(&st), "VHOST_SET_VRING_BUSYLOOP_TIMEOUT")
}

// kickQueue tells vhost that virtqueue q has new buffers.
func (n *Net) kickQueue(q int) error {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], 1)
	if _, err := unix.Write(n.kick[q], b[:]); err != nil && !errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("kick eventfd of queue %d: %w", q, err)
	}
	return nil
}

// Post posts up to k empty RX buffers and kicks vhost if it asked for it.
// It returns how many buffers it posted.
func (n *Net) Post(k int) (int, error) {
	defer profile.Running(profile.Traffic).End()
	old := n.RX.next
	posted := n.RX.PostWritable(k)
	if posted > 0 && n.RX.NeedsKick(old) {
		return posted, n.kickQueue(QueueRX)
	}
	return posted, nil
}

// Transmit posts frames on the TX virtqueue, each behind a zero virtio-net
// header (no checksum offload, no GSO), and kicks vhost if it asked for it.
// It returns how many it posted: fewer when TX buffers run out (see
// Reclaim).
func (n *Net) Transmit(frames [][]byte) (int, error) {
	defer profile.Running(profile.Traffic).End()
	old := n.TX.next
	posted, err := n.TX.PostReadable(make([]byte, HdrLen), frames)
	if err != nil {
		return 0, err
	}
	if posted > 0 && n.TX.NeedsKick(old) {
		return posted, n.kickQueue(QueueTX)
	}
	return posted, nil
}

// Reclaim takes back the TX buffers vhost has sent, and returns how many.
func (n *Net) Reclaim() (int, error) { return n.TX.Collect(nil) }

// Receive collects the RX buffers vhost has used and calls fn once per
// frame with the bytes vhost wrote, the virtio-net header and the frame (fn
// must not keep them); with FeatureMrgRxBuf a frame vhost spread over
// several buffers comes once, put together. It returns how many frames it
// passed to fn.
func (n *Net) Receive(fn func(data []byte)) (int, error) {
	defer profile.Running(profile.Traffic).End()
	if n.merge == nil {
		return n.RX.Collect(fn)
	}
	frames := 0
	_, err := n.RX.Collect(func(b []byte) {
		if f := n.merge.add(b); f != nil {
			fn(f)
			frames++
		}
	})
	if err == nil {
		err = n.merge.err
	}
	return frames, err
}

// WaitCall waits at most timeout for vhost to signal the RX call eventfd
// and clears it. It first arms the signal (Ring.ArmCall) and returns at
// once if used entries are already pending. It reports whether the signal
// came or entries were pending.
func (n *Net) WaitCall(timeout time.Duration) (bool, error) {
	defer profile.Running(profile.Waits).End()
	if n.RX.ArmCall() {
		return true, nil
	}
	fds := []unix.PollFd{{Fd: int32(n.call[QueueRX]), Events: unix.POLLIN}}
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
		if _, err := unix.Read(n.call[QueueRX], b[:]); err != nil && !errors.Is(err, unix.EAGAIN) {
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
	for _, fd := range []*int{&n.kick[0], &n.kick[1], &n.call[0], &n.call[1]} {
		if *fd >= 0 {
			errs = append(errs, unix.Close(*fd))
			*fd = -1
		}
	}
	if n.region != nil {
		errs = append(errs, unix.Munmap(n.region))
		n.region = nil
		n.RX, n.TX = nil, nil
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
