package splat

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestStaleInt3(t *testing.T) {
	// As seen under TCG on a 7.3.4 built from Debian's source (issue 15):
	// the byte before RIP is 0x66, the patched-in NOP, not the int3.
	stale := []string{
		"[   41.207552] Oops: int3: 0000 [#1] SMP NOPTI",
		"[   41.207610] RIP: 0010:sk_skb_reason_drop+0x31/0x130",
		"[   41.207655] Code: 48 89 fb 41 89 f4 41 89 d5 66 <90> 48 8b 43 58 a8 01 75 5a",
	}
	assert.Check(t, StaleInt3(stale))
	real := []string{
		"[   41.207552] Oops: int3: 0000 [#1] SMP NOPTI",
		"[   41.207655] Code: 48 89 fb 41 89 f4 41 89 d5 cc <90> 48 8b 43 58 a8 01 75 5a",
	}
	assert.Check(t, !StaleInt3(real), "a breakpoint still in the text is the kernel's")
	bug := []string{"BUG: kernel NULL pointer dereference", "Code: 48 89 fb 66 <90>"}
	assert.Check(t, !StaleInt3(bug), "not an int3 trap")
}
