package netenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// ErrNoThreadedNAPI says the kernel has no /sys/class/net/DEV/threaded
// (before 5.12); the device's NAPI then runs in softirq context.
var ErrNoThreadedNAPI = errors.New("no threaded NAPI attribute")

// ThreadedNAPI moves the NAPI instances of the device dev to kernel threads
// by writing /sys/class/net/DEV/threaded. A consumer then runs on its own
// thread, scheduled against the senders, and the device's ring fills and
// drains in bursts; its wake-ups come from another CPU.
//
// sysfs shows the devices of the namespace it was mounted in, so this runs
// on a throwaway OS thread with a private mount namespace, enters e's
// namespace, mounts a sysfs there and never returns the thread to the Go
// scheduler.
func (e *Env) ThreadedNAPI(dev string) error {
	defer profile.Running(profile.Setup).End()
	errc := make(chan error, 1)
	go func() {
		// No UnlockOSThread: the thread exits with the goroutine.
		runtime.LockOSThread()
		errc <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return fmt.Errorf("unshare mount namespace: %w", err)
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return fmt.Errorf("make mounts private: %w", err)
			}
			if err := netns.Set(e.NS); err != nil {
				return fmt.Errorf("enter namespace: %w", err)
			}
			dir, err := os.MkdirTemp("", "xmitcheck-sysfs-")
			if err != nil {
				return err
			}
			defer os.Remove(dir)
			if err := unix.Mount("sysfs", dir, "sysfs", 0, ""); err != nil {
				return fmt.Errorf("mount sysfs of the test namespace: %w", err)
			}
			defer unix.Unmount(dir, unix.MNT_DETACH)
			attr := filepath.Join(dir, "class/net", dev, "threaded")
			if _, err := os.Stat(attr); errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%w: %s", ErrNoThreadedNAPI, attr)
			}
			if err := os.WriteFile(attr, []byte("1"), 0); err != nil {
				return fmt.Errorf("write 1 to /sys/class/net/%s/threaded: %w", dev, err)
			}
			return nil
		}()
	}()
	return <-errc
}
