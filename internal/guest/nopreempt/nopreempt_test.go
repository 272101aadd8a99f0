package nopreempt_test

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/nopreempt"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

// opens is how many times TestVhostOwnerUnderSignals opens vhost-net.
const opens = 200

// TestVhostOwnerUnderSignals opens vhost-net (VHOST_SET_OWNER, in
// nopreempt.Do) opens times on one thread while another goroutine sends
// that thread SIGURG as fast as it can: none may fail. Made without Do,
// the same call fails with ENOMEM (see the package comment). It needs
// root and /dev/vhost-net, so it runs in a VM:
//
//	go test -exec 'xmitcheck exec --kernel debian:7.3' ./internal/nopreempt
func TestVhostOwnerUnderSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("opens /dev/vhost-net")
	}
	fd, err := unix.Open("/dev/vhost-net", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no vhost-net to open: %v", err)
	}
	unix.Close(fd)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	var stop atomic.Bool
	var sent atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			if unix.Tgkill(unix.Getpid(), tid, unix.SIGURG) == nil {
				sent.Add(1)
			}
		}
	}()
	var failed []error
	for range opens {
		n, err := vhostnet.Open(vhostnet.Config{})
		if err != nil {
			failed = append(failed, err)
			continue
		}
		assert.NilError(t, n.Close())
	}
	stop.Store(true)
	<-done
	t.Logf("%d opens, %d SIGURG sent to their thread", opens, sent.Load())
	if sent.Load() <= opens {
		t.Errorf("%d signals for %d opens: they must come faster than the opens", sent.Load(), opens)
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d opens failed, first: %v", len(failed), opens, failed[0])
	}
}

// TestDoRuns checks that Do returns fn's error.
func TestDoRuns(t *testing.T) {
	want := errors.New("fn's error")
	assert.Equal(t, nopreempt.Do(func() error { return want }), want)
}
