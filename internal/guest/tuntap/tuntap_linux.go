package tuntap

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// Device is one queue file of a tun/tap device.
type Device struct {
	// File is the queue's file. Open's is non-blocking, so reads honour
	// deadlines set with SetReadDeadline; OpenBlocking's is not.
	*os.File
	// Name is the interface name the kernel gave the device.
	Name string
}

// Open opens /dev/net/tun and attaches it to the device name (created if
// missing) with flags. The device lives in the network namespace of the
// calling thread (see netenv.Env.Do).
func Open(name string, flags uint16) (*Device, error) {
	return open(name, flags, unix.O_NONBLOCK)
}

// OpenBlocking is Open for a reader with a thread of its own, as a
// benchmark's (traffic.Reader.ReadToEnd): the file is blocking, so it stays
// out of the runtime's network poller and has no deadlines.
//
// A file in the poller costs the device a call for every frame it queues:
// the poller's epoll entry sits on the queue's wait queue, which tun wakes
// (sock_def_readable) whenever it holds an entry, reader waiting or not
// (docs/design/tap-benchmark-reader.md).
func OpenBlocking(name string, flags uint16) (*Device, error) {
	return open(name, flags, 0)
}

func open(name string, flags uint16, nonblock int) (*Device, error) {
	defer profile.Running(profile.Setup).End()
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|nonblock|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF %q flags %#x: %w", name, flags, err)
	}
	return &Device{File: os.NewFile(uintptr(fd), "tun:"+ifr.Name()), Name: ifr.Name()}, nil
}

// Features returns TUNGETFEATURES: the TUNSETIFF flags the kernel knows.
func Features() (uint32, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	defer unix.Close(fd)
	v, err := unix.IoctlGetUint32(fd, unix.TUNGETFEATURES)
	if err != nil {
		return 0, fmt.Errorf("TUNGETFEATURES: %w", err)
	}
	return v, nil
}

// ProbeBackpressure returns nil when the kernel offers IFF_BACKPRESSURE, an
// error matching feature.ErrNotSupported when it does not.
func ProbeBackpressure() error {
	f, err := Features()
	if err != nil {
		return err
	}
	if f&IFFBackpressure == 0 {
		return feature.Unsupported(feature.IFFBackpressure, "TUNGETFEATURES=%#x lacks %#x", f, IFFBackpressure)
	}
	return nil
}

// Flags returns the device's flags as the kernel keeps them (TUNGETIFF):
// a flag the kernel does not know is silently absent here.
func (d *Device) Flags() (uint16, error) {
	ifr, err := unix.NewIfreq("")
	if err != nil {
		return 0, err
	}
	if err := d.ioctlIfreq(unix.TUNGETIFF, ifr); err != nil {
		return 0, fmt.Errorf("TUNGETIFF %s: %w", d.Name, err)
	}
	return ifr.Uint16(), nil
}

// SetPersist keeps the device after its last file closes (TUNSETPERSIST).
func (d *Device) SetPersist(on bool) error {
	v := 0
	if on {
		v = 1
	}
	return d.ioctlInt(unix.TUNSETPERSIST, v, "TUNSETPERSIST")
}

// Attach re-attaches a detached queue of a multi-queue device (TUNSETQUEUE).
func (d *Device) Attach() error { return d.setQueue(IFFAttachQueue) }

// Detach detaches this queue of a multi-queue device (TUNSETQUEUE).
func (d *Device) Detach() error { return d.setQueue(IFFDetachQueue) }

func (d *Device) setQueue(flag uint16) error {
	ifr, err := unix.NewIfreq("")
	if err != nil {
		return err
	}
	ifr.SetUint16(flag)
	if err := d.ioctlIfreq(unix.TUNSETQUEUE, ifr); err != nil {
		return fmt.Errorf("TUNSETQUEUE %s %#x: %w", d.Name, flag, err)
	}
	return nil
}

// SetOffload tells the device which offloads its reader takes
// (TUNSETOFFLOAD, TunF* flags); the device's features follow.
func (d *Device) SetOffload(flags int) error {
	return d.ioctlInt(unix.TUNSETOFFLOAD, flags, "TUNSETOFFLOAD")
}

// SetVnetHdrSize sets the virtio-net header size (TUNSETVNETHDRSZ).
func (d *Device) SetVnetHdrSize(n int) error {
	return d.ioctlPtrInt(unix.TUNSETVNETHDRSZ, n, "TUNSETVNETHDRSZ")
}

// SetSteeringEBPF makes the BPF socket-filter program progFD choose the
// queue of every transmitted packet (TUNSETSTEERINGEBPF); -1 detaches it.
func (d *Device) SetSteeringEBPF(progFD int) error {
	return d.ioctlPtrInt(unix.TUNSETSTEERINGEBPF, progFD, "TUNSETSTEERINGEBPF")
}

func (d *Device) ioctlIfreq(req uint, ifr *unix.Ifreq) error {
	rc, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) { ierr = unix.IoctlIfreq(int(fd), req, ifr) }); err != nil {
		return err
	}
	return ierr
}

// ioctlInt passes an int by value (TUNSETPERSIST and TUNSETOFFLOAD take
// their argument so).
func (d *Device) ioctlInt(req uint, v int, name string) error {
	rc, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) { ierr = unix.IoctlSetInt(int(fd), req, v) }); err != nil {
		return err
	}
	if ierr != nil {
		return fmt.Errorf("%s %s: %w", name, d.Name, ierr)
	}
	return nil
}

// ioctlPtrInt passes a pointer to an int (TUNSETVNETHDRSZ, TUNSETSTEERINGEBPF).
func (d *Device) ioctlPtrInt(req uint, v int, name string) error {
	rc, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) { ierr = unix.IoctlSetPointerInt(int(fd), req, v) }); err != nil {
		return err
	}
	if ierr != nil {
		return fmt.Errorf("%s %s: %w", name, d.Name, ierr)
	}
	return nil
}

// Gone reports whether d's device is gone (deleted, or its namespace
// destroyed): TUNGETIFF fails with EBADFD.
func (d *Device) Gone() (bool, error) {
	_, err := d.Flags()
	if errors.Is(err, unix.EBADFD) {
		return true, nil
	}
	return false, err
}
