package guest

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// portWait bounds the wait for the ports to show up after boot.
	portWait = 10 * time.Second
	// pollSlice is how long a blocked write waits before it looks again.
	pollSlice = 20 * time.Millisecond
	// stallLimit is how long a port may take no bytes before the host
	// is considered gone.
	stallLimit = 60 * time.Second
)

// openPorts waits for the two xmitcheck ports and opens them.
func openPorts() (*portSender, error) {
	deadline := time.Now().Add(portWait)
	var found map[string]string
	for {
		found = findPorts()
		if found[OutPort] != "" && found[CtlPort] != "" {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("virtio ports %s and %s not found in %s after %v (found %v): is virtio_console loaded?",
				OutPort, CtlPort, portsDir, portWait, found)
		}
		time.Sleep(10 * time.Millisecond)
	}
	out, err := openPort(found[OutPort])
	if err != nil {
		return nil, err
	}
	ctl, err := openPort(found[CtlPort])
	if err != nil {
		return nil, err
	}
	return &portSender{out: out, ctl: ctl}, nil
}

// portWriter writes to a virtio-serial port without ever blocking in the
// kernel.
//
// A blocking write can sleep forever in wait_port_writable when the host's
// "buffer consumed" interrupt is lost (lmb/vimto#29, cilium/ebpf#1734). A
// non-blocking write that finds the ring full instead polls for a bounded
// slice and tries again: every retry reclaims the buffers the host has
// consumed (will_write_block → reclaim_consumed_buffers), interrupt or not.
type portWriter struct {
	fd   int
	path string
}

func openPort(path string) (*portWriter, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open virtio port %s: %w", path, err)
	}
	return &portWriter{fd: fd, path: path}, nil
}

func (w *portWriter) Write(p []byte) (int, error) {
	done := 0
	last := time.Now()
	for done < len(p) {
		n, err := unix.Write(w.fd, p[done:])
		if n > 0 {
			done += n
			last = time.Now()
		}
		switch {
		case err == nil, errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			if time.Since(last) > stallLimit {
				return done, fmt.Errorf("write %s: no progress for %v", w.path, stallLimit)
			}
			fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLOUT}}
			unix.Poll(fds, int(pollSlice/time.Millisecond))
		default:
			return done, fmt.Errorf("write %s: %w", w.path, err)
		}
	}
	return done, nil
}
