package vhost

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/netenv"
)

// holdFor is how long a state must stay unchanged to count as "nothing
// moved" (a stopped queue, no frame freed). Softirq latency is
// microseconds; 200 ms is three orders of magnitude more.
const holdFor = 200 * time.Millisecond

// socketsUsed reads "sockets: used" of e's namespace from sockstat: the
// sockets alive there, counted from sk_alloc to __sk_free (net/core/sock.c,
// sock_inuse_add). A queue file of a tap is one (the tun_file's sock, in
// the namespace that opened /dev/net/tun; vhost-net holds it through its
// reference to the file), and so is every AF_PACKET and netlink socket. A
// socket with frames still charged to it (sk_wmem_alloc, e.g. frames
// waiting in a qdisc) is freed only when the last of them is: a frame a
// teardown loses keeps its sender counted after close. The count is the
// namespace's alone, so nothing outside the test moves it; closed netlink
// sockets leave it after an RCU grace period.
func socketsUsed(e *netenv.Env) (int, error) {
	var used int
	err := e.Do(func() error {
		// /proc/thread-self/net is the calling thread's namespace;
		// /proc/self/net would be the main thread's.
		f, err := os.Open("/proc/thread-self/net/sockstat")
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "sockets: used "); ok {
				used, err = strconv.Atoi(rest)
				return err
			}
		}
		return fmt.Errorf("no \"sockets: used\" line: %v", sc.Err())
	})
	return used, err
}

// freedCounter counts, from its start, the frames the kernel frees on the
// rig's tap with kfree_skb, every drop reason together: tun's and the
// qdisc's drops, and what a teardown frees (a ring purged, a qdisc reset,
// a frame vhost-net holds meeting a detached queue). Frames the guest gets
// are consumed (consume_skb), not counted. A frame the tap held and nobody
// freed is missing from it; the kernel frees nothing else there (IPv6 is
// off, nothing else sends).
//
// The filter goes through skb->dev. A frame freed after its device (the
// batch vhost holds outlives a deleted tap: batchOutlives) points at a
// net_device already freed, and the filter reads what that memory still
// holds: a tap's net_device with its tun_struct is about 13 KB, a
// kmalloc_large block handed back to the page allocator, whose next user
// may overwrite it. It counted all 63 such frames in every DeleteLink and
// DeleteNetns round so far; a filter on the frame itself (skb->mark set by
// the sender) would not depend on it.
type freedCounter struct{ m *dropmon.Monitor }

// requireFreed skips t, naming the probe, on a kernel without drop reasons
// in its BTF (the counter's tracepoint program needs them): it attaches a
// counter and detaches it at once.
func requireFreed(t testing.TB) {
	t.Helper()
	m, err := dropmon.Attach(dropmon.Filter{})
	feature.Require(t, err)
	m.Close()
}

// freed starts counting the frames freed on the rig's tap, in r.e.
func (r *rig) freed() *freedCounter {
	t := r.tb
	t.Helper()
	ino, err := dropmon.NetnsInode(int(r.e.NS))
	assert.NilError(t, err)
	m, err := dropmon.Attach(dropmon.Filter{Ifindex: r.link.Attrs().Index, NetnsInode: ino})
	feature.Require(t, err)
	t.Cleanup(func() { m.Close() })
	return &freedCounter{m}
}

// total is every frame freed so far, and the counts by reason (the values
// of the kernel's enum skb_drop_reason).
func (c *freedCounter) total() (freedCount, error) {
	by, err := c.m.All()
	var n uint64
	for _, v := range by {
		n += v
	}
	return freedCount{n, by}, err
}

type freedCount struct {
	n        uint64
	byReason map[uint32]uint64
}

func (f freedCount) String() string {
	return fmt.Sprintf("%d freed with kfree_skb (by enum skb_drop_reason value: %v)", f.n, f.byReason)
}

// waitFreed waits until exactly want of the tap's frames were freed: the
// kernel frees some after the step that dropped them (in NET_TX, at
// rtnl_unlock, in vhost's worker).
func (c *freedCounter) waitFreed(t testing.TB, want uint64, l counters.Accounting) {
	t.Helper()
	got, err := counters.WaitFor(context.Background(), wait, c.total, func(f freedCount) bool { return f.n >= want })
	assert.NilError(t, err, "frames freed, want %d; %v", want, l)
	assert.Check(t, got.n == want, "frames freed: %v, want %d (every frame the guest did not get, freed exactly once); %v", got, want, l)
	t.Logf("%v", got)
}

// holdFreed checks, for holdFor, that exactly want frames have been freed
// on the tap, and no more: what says what must free nothing more.
func (c *freedCounter) holdFreed(t testing.TB, want uint64, what string, l counters.Accounting) {
	t.Helper()
	end := time.Now().Add(holdFor)
	for {
		got, err := c.total()
		assert.NilError(t, err)
		assert.Assert(t, got.n == want, "%s: frames freed: %v, want %d; %v", what, got, want, l)
		if time.Now().After(end) {
			return
		}
		time.Sleep(counters.PollInterval)
	}
}

// bounded runs step on a goroutine of its own and fails t when it has not
// returned within wait. A teardown that blocks (unregistering a device
// waits in netdev_run_todo for its last reference, closing vhost-net
// flushes its worker) is a hang, not a slow step; the goroutine is then
// left behind.
func bounded(t testing.TB, what string, step func() error) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- step() }()
	select {
	case err := <-done:
		assert.NilError(t, err, "%s", what)
	case <-time.After(wait):
		t.Fatalf("%s: not returned after %v (the kernel is stuck in it)", what, wait)
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("%s took %v", what, d)
	}
}

// teardownRounds is how many times each teardown runs. A fixed number, not
// a time budget, so the same kernel runs the same subtests on any machine
// (a soak compares them by name); soak with `xmitcheck run -count N`,
// which repeats the whole test.
const teardownRounds = 3

// rounds runs round as subtests round=1, round=2, … in the namespace e
// and checks after each that e has exactly the sockets it had before the
// first (socketsUsed). It stops at the first round that fails.
func rounds(t *testing.T, e *netenv.Env, round func(t *testing.T)) {
	t.Helper()
	base, err := socketsUsed(e)
	assert.NilError(t, err)
	start := time.Now()
	for n := 1; n <= teardownRounds; n++ {
		if !t.Run(fmt.Sprintf("round=%d", n), round) {
			return
		}
		used, err := counters.WaitFor(context.Background(), wait, func() (int, error) { return socketsUsed(e) }, func(u int) bool { return u == base })
		if err != nil {
			t.Fatalf("round %d: the namespace has %d sockets after the teardown, %d before the first round: %v", n, used, base, err)
		}
	}
	t.Logf("%d rounds in %v; the namespace has its %d sockets after each", teardownRounds, time.Since(start).Round(time.Millisecond), base)
}
