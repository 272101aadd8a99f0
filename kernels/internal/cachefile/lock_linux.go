package cachefile

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive flock on path, waiting until ctx is done while
// another process holds it. The kernel drops the lock when the process dies,
// so a killed run never leaves it taken.
func Lock(ctx context.Context, path, what string, progress io.Writer) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for waited := false; ; waited = true {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if err != unix.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if !waited {
			Note(progress, "waiting for another xmitcheck that holds %s (%s)…", what, path)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for %s: %w (another xmitcheck holds %s)", what, ctx.Err(), path)
		case <-tick.C:
		}
	}
}
