package vmpath

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/kmsg"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

// stopLimit bounds the teardown's wait for the forwarding threads, once
// their taps are gone.
const stopLimit = 10 * time.Second

// Path is the two namespaces, their taps and the consumer moving frames
// between them.
type Path struct {
	cfg Config
	// H holds HostTap, G GuestTap.
	H, G *netenv.Env
	// host is HostTap's queue file, guest GuestTap's.
	host, guest *tuntap.Device
	// vm is the vhost-net device of the VhostNet consumer.
	vm *vhostnet.Net
	// stop is set when the teardown begins: the forwarders' errors are
	// then the teardown's doing.
	stop atomic.Bool
	// done gets each forwarding thread's error as it returns.
	done    chan error
	running int
	// restoreProcs puts GOMAXPROCS back as start found it.
	restoreProcs func()
}

// New builds the path of cfg and starts its consumer; t.Cleanup stops it
// and removes everything. Probes decide the skips, each naming its probe:
// IFF_BACKPRESSURE (TUNGETFEATURES) when cfg asks for it, vhost-net
// (/dev/vhost-net) for VhostNet. Both taps keep the ring and the root
// qdisc the kernel gives a tap. The kernel must log no splat meanwhile.
func New(tb testing.TB, cfg Config) *Path {
	tb.Helper()
	if cfg.Backpressure {
		observe.Probe(tb, feature.IFFBackpressure, tuntap.ProbeBackpressure())
	}
	kmsg.Watch(tb)
	p := &Path{cfg: cfg, H: netenv.New(tb), G: netenv.New(tb), done: make(chan error, 2)}
	hostFlags, guestFlags := uint16(tuntap.IFFTap|tuntap.IFFNoPI), uint16(tuntap.IFFTap|tuntap.IFFNoPI)
	if cfg.Backpressure {
		hostFlags |= tuntap.IFFBackpressure
	}
	if cfg.Offload {
		// Packets that need offloads travel with their virtio-net header.
		hostFlags |= tuntap.IFFVnetHdr
		guestFlags |= tuntap.IFFVnetHdr
	}
	switch cfg.Consumer {
	case VhostNet:
		vc := vhostnet.Config{}
		if cfg.Offload {
			// A 64 KiB packet spread over 4 KiB buffers, as Linux's
			// virtio-net posts them for mergeable receive buffers.
			vc = vhostnet.Config{Features: vhostnet.FeatureMrgRxBuf, BufSize: 4096}
		}
		var err error
		p.vm, err = vhostnet.Open(vc)
		observe.Probe(tb, feature.VhostNet, err)
		tb.Cleanup(func() { p.vm.Close() })
		hostFlags |= tuntap.IFFVnetHdr
	case Read:
	default:
		tb.Fatalf("vmpath: unknown consumer %q", cfg.Consumer)
	}
	p.host = openTap(tb, p.H, HostTap, hostFlags)
	p.guest = openTap(tb, p.G, GuestTap, guestFlags)
	if cfg.Offload {
		assert.NilError(tb, p.host.SetOffload(tuntap.TunFCsum|tuntap.TunFTSO4|tuntap.TunFTSO6|tuntap.TunFTSOECN))
	}
	if cfg.Consumer == VhostNet {
		assert.NilError(tb, p.vm.SetBackend(p.host))
	}
	address(tb, p.H, HostTap, HostAddr)
	address(tb, p.G, GuestTap, GuestAddr)
	p.start()
	tb.Cleanup(func() { p.close(tb) })
	return p
}

// openTap opens a tap called name in e with flags, from a blocking file
// (tuntap.OpenBlocking: out of the runtime's poller, whose epoll entry
// would cost the tap a wake-up call per frame), checks that the kernel
// kept every flag, and makes a virtio-net header 12 bytes long.
func openTap(tb testing.TB, e *netenv.Env, name string, flags uint16) *tuntap.Device {
	tb.Helper()
	var d *tuntap.Device
	assert.NilError(tb, e.Do(func() (err error) {
		d, err = tuntap.OpenBlocking(name, flags)
		return err
	}))
	tb.Cleanup(func() { d.Close() })
	got, err := d.Flags()
	assert.NilError(tb, err)
	assert.Equal(tb, got&flags, flags, "TUNGETIFF flags %#x of %s: the kernel did not keep %#x", got, name, flags&^got)
	if flags&tuntap.IFFVnetHdr != 0 {
		// struct virtio_net_hdr_mrg_rxbuf, vhost-net's header.
		assert.NilError(tb, d.SetVnetHdrSize(vhostnet.HdrLen))
	}
	return d
}

// address gives the link called name in e the address a and sets it up.
func address(tb testing.TB, e *netenv.Env, name string, a netip.Prefix) {
	tb.Helper()
	l := e.Link(tb, name)
	addr, err := netlink.ParseAddr(a.String())
	assert.NilError(tb, err)
	assert.NilError(tb, e.Handle.AddrAdd(l, addr), "address %v on %s", a, name)
	e.Up(tb, l)
}

// start starts the consumer's two forwarding threads, each in the
// namespace of the tap it reads (netenv.Env.Do: a locked thread that
// leaves the namespace before it serves anything else). tun's reads and
// writes do not depend on the thread's namespace; a thread that opened a
// socket would.
func (p *Path) start() {
	// A P of their own for the forwarders, beside every CPU's, so that
	// one back from a read never waits for the senders' and receivers'
	// goroutines to yield one.
	procs := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(max(procs, runtime.NumCPU()+2))
	toGuest, toHost := p.readHost, p.readGuest
	if p.cfg.Consumer == VhostNet {
		toGuest, toHost = p.receive, p.transmit
	}
	for _, f := range []struct {
		e  *netenv.Env
		fn func() error
	}{{p.H, toGuest}, {p.G, toHost}} {
		p.running++
		go func() { p.done <- f.e.Do(f.fn) }()
	}
	p.restoreProcs = func() { runtime.GOMAXPROCS(procs) }
}

// close stops the forwarders, removes the taps and restores GOMAXPROCS.
// A forwarder blocked in read(2) wakes when its tap goes
// (tun_detach_all sets RCV_SHUTDOWN and wakes the queue's readers); the
// vhost-net one sees stop at its next call wait. Only an error from
// before stop fails tb.
func (p *Path) close(tb testing.TB) {
	tb.Helper()
	defer p.restoreProcs()
	p.stop.Store(true)
	if p.vm != nil {
		assert.Check(tb, p.vm.DetachBackend(), "detach %s from vhost-net", HostTap)
	}
	for _, e := range []struct {
		env  *netenv.Env
		name string
	}{{p.H, HostTap}, {p.G, GuestTap}} {
		if l, err := e.env.Handle.LinkByName(e.name); assert.Check(tb, err) {
			assert.Check(tb, e.env.DeleteLinks(l))
		}
	}
	limit := time.After(stopLimit)
	for ; p.running > 0; p.running-- {
		select {
		case err := <-p.done:
			assert.Check(tb, err)
		case <-limit:
			tb.Errorf("vmpath: %d forwarding threads still running %v after their taps were deleted", p.running, stopLimit)
			return
		}
	}
}

// Counters reads HostTap's counters.
func (p *Path) Counters() (Counters, error) {
	var c Counters
	var err error
	if c.Link, err = counters.ReadLink(p.H.Handle, HostTap); err != nil {
		return c, err
	}
	c.Qdisc, err = counters.ReadRootQdisc(p.H, HostTap)
	return c, err
}

// guestIP is GuestAddr's address for a dialer.
func guestIP() net.IP { return net.IP(GuestAddr.Addr().AsSlice()) }

// forwardErr is a forwarder's error from what it did: nil when the
// teardown caused it.
func (p *Path) forwardErr(what string, err error) error {
	if err == nil || p.stop.Load() {
		return nil
	}
	return fmt.Errorf("vmpath, %s consumer: %s: %w", p.cfg.Consumer, what, err)
}
