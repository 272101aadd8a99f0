package vhost

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/netenv"
)

// newDoomedNS creates a network namespace that the test deletes itself:
// kill drops every reference the test holds to it (its file and the
// netlink handle), after which the kernel destroys it as soon as nothing
// else holds it. kill is idempotent and also runs at the end of the test.
// Like netenv.New, it turns IPv6 off for the devices that come to live
// there (stray ND/MLD frames would break exact counts).
//
// netenv.New cannot serve: its cleanup closes the namespace's file
// descriptor by number, which a test must not have closed before (the
// number may belong to another file by then).
func newDoomedNS(t testing.TB) (e *netenv.Env, kill func()) {
	t.Helper()
	ns, err := unshareNetns()
	assert.NilError(t, err)
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		ns.Close()
		t.Fatalf("netlink handle in a new namespace: %v", err)
	}
	e = &netenv.Env{NS: ns, Handle: h}
	// Close through e.NS, which Close then sets to -1: a second close is
	// of no file at all.
	kill = func() {
		h.Close()
		e.NS.Close()
	}
	t.Cleanup(kill)
	assert.NilError(t, e.Do(func() error {
		for _, key := range []string{"all", "default"} {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+key+"/disable_ipv6", []byte("1"), 0); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		return nil
	}), "turn IPv6 off in the new namespace")
	return e, kill
}

// unshareNetns creates a namespace on a thread of its own, which it
// leaves locked (to die with its goroutine) if it cannot return to its
// namespace.
func unshareNetns() (netns.NsHandle, error) {
	type result struct {
		ns  netns.NsHandle
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("current namespace: %w", err)}
			return
		}
		defer orig.Close()
		ns, err := netns.New()
		if err != nil {
			done <- result{err: fmt.Errorf("new namespace: %w", err)}
			if netns.Set(orig) == nil {
				runtime.UnlockOSThread()
			}
			return
		}
		if err := netns.Set(orig); err != nil {
			ns.Close()
			done <- result{err: fmt.Errorf("restore namespace: %w", err)}
			return
		}
		runtime.UnlockOSThread()
		done <- result{ns: ns}
	}()
	r := <-done
	return r.ns, r.err
}
