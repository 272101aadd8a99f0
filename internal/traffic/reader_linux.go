package traffic

import (
	"errors"
	"fmt"

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
