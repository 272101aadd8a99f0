package kmsg

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestSplat(t *testing.T) {
	msg, ok := splatMessage("4,1234,5678,-;WARNING: CPU: 1 PID: 7 at net/core/dev.c:3456 __dev_queue_xmit+0x1\n")
	assert.Assert(t, ok)
	assert.Equal(t, msg, "WARNING: CPU: 1 PID: 7 at net/core/dev.c:3456 __dev_queue_xmit+0x1")
	_, ok = splatMessage("6,1235,5679,-;tun: Universal TUN/TAP device driver, 1.6\n")
	assert.Assert(t, !ok)
	_, ok = splatMessage("4,1236,5680,-;NETDEV WATCHDOG: tap0 (tun): transmit queue 0 timed out 5000 ms\n")
	assert.Assert(t, ok, "a stalled tx queue is a splat for the transmit path")
}

func TestLeakedDeviceIsASplat(t *testing.T) {
	_, ok := splatMessage("0,1237,5681,-;unregister_netdevice: waiting for tap0 to become free. Usage count = 2\n")
	assert.Assert(t, ok, "a device whose references leaked is a splat for the transmit path")
}

// TestSanitizersJudgedApart: a sanitizer's reports are left to the judge,
// with the taint KASAN sets; any other splat among them is the guest's to
// fail on.
func TestSanitizersJudgedApart(t *testing.T) {
	ok, taints := judgedApart([]string{"BUG: KCSAN: data-race in a / b", "unreferenced object 0xffff8880 (size 8):"})
	assert.Check(t, ok)
	assert.Check(t, taints == 0)
	ok, taints = judgedApart([]string{"BUG: KASAN: slab-use-after-free in tun_do_read+0x1/0x2"})
	assert.Check(t, ok)
	assert.Check(t, taints == taintBadPage)
	ok, _ = judgedApart([]string{"BUG: KCSAN: data-race in a / b", "WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1/0x2"})
	assert.Check(t, !ok, "a warning beside a race is the guest's")
	ok, _ = judgedApart(nil)
	assert.Check(t, !ok)
}
