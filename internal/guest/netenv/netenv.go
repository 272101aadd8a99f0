// Package netenv gives each test a network namespace of its own, with IPv6
// off (stray ND/MLD frames would break exact counts), and runs code inside
// it. Everything a test builds lives in that namespace and goes away with it
// in t.Cleanup, so the host is left exactly as it was.
package netenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// Env is one test's network namespace.
type Env struct {
	// NS is the namespace; it is closed by the test's cleanup.
	NS netns.NsHandle
	// Handle talks netlink inside NS.
	Handle *netlink.Handle
	// born are the devices a Shared namespace was created with.
	born []string
}

// New creates a namespace for tb, brings its loopback up and turns IPv6 off
// for every device created afterwards. It fails tb when not run as root.
func New(tb testing.TB) *Env {
	tb.Helper()
	e := create(tb)
	tb.Cleanup(func() { e.close() })
	return e
}

// create creates a namespace for tb, as a step of its test; it skips tb
// with -short and fails it when not run as root.
func create(tb testing.TB) *Env {
	tb.Helper()
	observe.Step(tb)
	defer profile.Start(tb, profile.Setup).End()
	if testing.Short() {
		tb.Skip("netenv: needs root and network namespaces: not with -short")
	}
	e, err := open()
	if err != nil {
		tb.Fatalf("netenv: %v", err)
	}
	return e
}

// NewDoomed creates a namespace the test deletes itself: kill drops every
// reference the test holds to it (its file and the netlink handle), after
// which the kernel destroys it as soon as nothing else holds it. kill is
// idempotent and also runs at the test's end.
func NewDoomed(tb testing.TB) (e *Env, kill func()) {
	tb.Helper()
	e = create(tb)
	kill = func() { e.close() }
	tb.Cleanup(kill)
	return e, kill
}

// Shared creates a namespace as New does, for many tests in turn: each
// must leave it as it found it, its devices deleted (Bare checks), and
// close removes it. It makes, per test, the 0.1 to 0.25 s that creating a
// namespace takes under the emulator, and the work of destroying it.
func Shared() (e *Env, close func() error, err error) {
	if e, err = open(); err != nil {
		return nil, nil, err
	}
	if e.born, err = e.links(); err != nil {
		e.close()
		return nil, nil, err
	}
	return e, e.close, nil
}

// open creates a namespace, without moving the calling goroutine into it,
// and a netlink handle in it; it turns IPv6 off for every device created
// there afterwards and brings the loopback up.
func open() (*Env, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("network namespaces need root: run the suites as root, in a VM (xmitcheck run) or with sudo")
	}
	ns, err := newNS()
	if err != nil {
		return nil, err
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("netlink handle in namespace: %w", err)
	}
	e := &Env{NS: ns, Handle: h}
	err = e.Do(func() error {
		for _, key := range []string{"net/ipv6/conf/all/disable_ipv6", "net/ipv6/conf/default/disable_ipv6"} {
			if err := sysctl(key, "1"); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		lo, err := e.Handle.LinkByName("lo")
		if err != nil {
			return err
		}
		return e.Handle.LinkSetUp(lo)
	})
	if err != nil {
		e.close()
		return nil, fmt.Errorf("set up namespace: %w", err)
	}
	return e, nil
}

// close drops the handle and the namespace's file. It may run twice: the
// file is closed through e.NS, which Close sets to -1, so a second close
// is of no file at all, never of another file that took its number.
func (e *Env) close() error {
	e.Handle.Close()
	return e.NS.Close()
}

// Bare returns an error naming the devices in e, a Shared namespace, that
// it was not created with (its loopback, and the fallback devices of tunnel drivers built in,
// such as sit0): a shared namespace a test left them in is not as the next
// test needs it.
func (e *Env) Bare() error {
	now, err := e.links()
	if err != nil {
		return err
	}
	var left []string
	for _, l := range now {
		if !slices.Contains(e.born, l) {
			left = append(left, l)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("the shared namespace has %v, which it was not created with (%v)", left, e.born)
	}
	return nil
}

// links names e's devices, each with its index.
func (e *Env) links() ([]string, error) {
	ls, err := e.Handle.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list the namespace's links: %w", err)
	}
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = fmt.Sprintf("%s#%d", l.Attrs().Name, l.Attrs().Index)
	}
	return names, nil
}

// newNS creates a namespace without moving the calling goroutine into it.
func newNS() (netns.NsHandle, error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return 0, fmt.Errorf("current namespace: %w", err)
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		runtime.UnlockOSThread()
		return 0, fmt.Errorf("new namespace: %w", err)
	}
	if err := netns.Set(orig); err != nil {
		// The thread is stuck in the new namespace: keep it locked so it
		// dies with the goroutine instead of serving others.
		ns.Close()
		return 0, fmt.Errorf("restore namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return ns, nil
}

// Do runs fn on a locked OS thread inside the namespace. Sockets and
// /dev/net/tun files opened by fn belong to the namespace for their life.
// If the thread cannot return to its namespace it is left locked, so that
// it exits with the goroutine and never serves another one.
func (e *Env) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(e.NS); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter namespace: %w", err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			errc <- fmt.Errorf("leave namespace: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

func sysctl(key, value string) error {
	return os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0)
}
