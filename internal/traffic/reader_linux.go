package traffic

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ReadNow reads one frame if one is waiting, without waiting and without
// touching the file's deadlines (another goroutine may be in Read on the
// same file). It returns 1 if it read a frame, 0 if there was none.
func (r *Reader) ReadNow() (int, error) {
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
	return 1, r.record(r.buf[:m])
}

// ReadToEnd reads frames as they come until it reads a frame of stream
// end, which it does not count: the caller sends that frame once every
// frame it counts has been read or dropped, and again until ReadToEnd
// returns (the queue may drop one). Other goroutines may call Total
// meanwhile; Seen and Streams belong to it until it returns, and nothing
// else may read the file.
//
// It reads as tapbench.c's reader does: on a thread of its own, one
// read(2) per frame, blocking, so a read that finds the queue empty sleeps
// in the kernel until a frame comes, where a non-blocking one costs a
// failed read and a wait in a poll. With 2 threads sending, BenchmarkTap's
// reader found the queue empty once every 5 frames (this machine's 6.18,
// 2026-12-01). The read is a raw system call on a dup of the file's
// descriptor, so the file must be blocking: for a tap, open it with
// tuntap.OpenBlocking (a file in the runtime's poller would also cost the
// sender a call per frame). A non-blocking file is an error.
//
// While it waits in read(2), its goroutine holds a P and cannot be stopped:
// a stop of the world (a garbage collection, runtime.ReadMemStats,
// runtime.GOMAXPROCS, testing.B's ResetTimer and StopTimer) waits for the
// next frame, and if none comes, for ever. The caller turns the garbage
// collector off (debug.SetGCPercent(-1)) and makes no such call until
// ReadToEnd returns.
func (r *Reader) ReadToEnd(end uint32) error {
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
	for {
		// syscall.RawSyscall6 is the shortest way in: unix.RawSyscall and
		// syscall.RawSyscall call it through two more frames, 2 % of the
		// reader's time (perf, BenchmarkTap with 2 threads sending).
		m, _, errno := syscall.RawSyscall6(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&r.buf[0])), uintptr(len(r.buf)), 0, 0, 0)
		switch errno {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return fmt.Errorf("read %s: %w: ReadToEnd needs a blocking file (tuntap.OpenBlocking)", r.f.Name(), errno)
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
