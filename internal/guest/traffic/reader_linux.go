package traffic

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// ReadNow reads one frame if one is waiting, without waiting and without
// touching the file's deadlines (another goroutine may be in Read on the
// same file). It returns 1 if it read a frame, 0 if there was none.
func (r *Reader) ReadNow() (int, error) {
	defer profile.Running(profile.Traffic).End()
	rc, err := r.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var m int
	var rerr error
	if err := rc.Control(func(fd uintptr) { m, rerr = unix.Read(int(fd), r.buf) }); err != nil {
		return 0, err
	}
	if errors.Is(rerr, unix.EAGAIN) {
		return 0, nil
	}
	if rerr != nil {
		return 0, fmt.Errorf("read %s: %w", r.f.Name(), rerr)
	}
	return 1, r.Record(r.buf[:m])
}

// ReadToEnd reads frames as they come until it reads a frame of stream
// end, which it does not count: the caller sends that frame once every
// frame it counts has been read or dropped, and again until ReadToEnd
// returns (the queue may drop one). Other goroutines may call Total
// meanwhile; Seen and Streams belong to it until it returns, and nothing
// else may read the file.
//
// It busy-polls on a thread of its own: one read(2) per frame, and when the
// queue is empty it yields the CPU (sched_yield) and reads again, so it
// never sleeps. A sleeping reader must be woken by the sender that queues
// the next frame, and lands on that sender's CPU with a cold cache
// (docs/design/tap-benchmark-reader.md).
//
// The read is a raw system call on a dup of the file's descriptor, which
// must be blocking, so that it is out of the runtime's poller (for a tap,
// open it with tuntap.OpenBlocking); ReadToEnd makes it non-blocking until
// it returns. A non-blocking file is an error.
func (r *Reader) ReadToEnd(end uint32) error {
	defer profile.Running(profile.Traffic).End()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rc, err := r.f.SyscallConn()
	if err != nil {
		return err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return err
	}
	if derr != nil {
		return fmt.Errorf("dup %s: %w", r.f.Name(), derr)
	}
	defer unix.Close(fd)
	// The dup shares the file's flags.
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return fmt.Errorf("F_GETFL %s: %w", r.f.Name(), err)
	}
	if fl&unix.O_NONBLOCK != 0 {
		return fmt.Errorf("%s is non-blocking: ReadToEnd needs a blocking file (tuntap.OpenBlocking)", r.f.Name())
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl|unix.O_NONBLOCK); err != nil {
		return fmt.Errorf("F_SETFL O_NONBLOCK %s: %w", r.f.Name(), err)
	}
	defer unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl)
	for {
		// syscall.RawSyscall6 is the shortest way in: unix.RawSyscall and
		// syscall.RawSyscall call it through two more frames, 2 % of the
		// reader's time (perf, BenchmarkTap with 2 threads sending).
		m, _, errno := syscall.RawSyscall6(unix.SYS_READ,
			uintptr(fd), uintptr(unsafe.Pointer(&r.buf[0])), uintptr(len(r.buf)), 0, 0, 0)
		switch errno {
		case 0:
		case unix.EAGAIN, unix.EINTR:
			// Not a raw call: entering a system call through the
			// runtime lets a stop of the world take the P, which it
			// could not while the loop runs raw calls and no Go function
			// prologue.
			syscall.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			continue
		default:
			return fmt.Errorf("read %s: %w", r.f.Name(), errno)
		}
		stream, seq, err := Parse(r.buf[:m])
		switch {
		case err != nil:
			return err
		case stream == end:
			return nil
		}
		r.follow(stream, seq)
	}
}
