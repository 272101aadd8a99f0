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
