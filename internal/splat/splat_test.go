package splat

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestStart(t *testing.T) {
	for line, want := range map[string]string{
		"WARNING: CPU: 1 PID: 7 at net/core/dev.c:3456 __dev_queue_xmit+0x1": Warning,
		"WARNING: net/core/dev.c:3456 at __dev_queue_xmit, CPU#0: a/1":       Warning,
		"WARNING: possible circular locking dependency detected":             Lockdep,
		"BUG: KASAN: slab-use-after-free in tun_net_xmit":                    KASAN,
		"BUG: kernel NULL pointer dereference, address: 0000000000000008":    BUG,
		"BUG: KCSAN: data-race in __tun_wake_queue / tun_net_xmit":           KCSAN,
		"unreferenced object 0xffff888005d1e600 (size 232):":                 Kmemleak,
		"unreferenced object (percpu) 0x00006e5fc0a1b2c8 (size 8):":          Kmemleak,
		"Kernel panic - not syncing: sysrq triggered crash":                  Panic,
		"rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:":              RCUStall,
		"INFO: task kworker/2:1:5747 blocked for more than 120 seconds.":     HungTask,
		"tun: Universal TUN/TAP device driver, 1.6":                          "",
	} {
		assert.Equal(t, Start(line), want, line)
	}
}
