// Package faults is the test binary of scripts/faults.sh: it makes one
// fault happen where XMITCHECK_FAULT says, so that the runner's verdict and
// exit code for it can be checked in a real VM. The kernel faults go
// through LKDTM (/sys/kernel/debug/provoke-crash/DIRECT: a kernel built
// with scripts/faults/lkdtm.config). Its tests stand for seed 000-tun: with
// no fault, TestShown makes it present. Nothing happens unless
// XMITCHECK_FAULT is set, so the binary is harmless when run by accident.
package faults

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

// fault is the fault asked for: warn-test, warn-skip, warn-between,
// warn-teardown, warn-after, panic, hang, lost, no-tun; or none, for no
// fault at all.
var fault = os.Getenv("XMITCHECK_FAULT")

// provoke makes the kernel do what (an LKDTM crash type) when fault is want.
func provoke(t testing.TB, want, what string) {
	if fault != want {
		return
	}
	if err := os.WriteFile("/sys/kernel/debug/provoke-crash/DIRECT", []byte(what), 0); err != nil {
		t.Fatalf("provoke %s (needs a kernel with CONFIG_LKDTM): %v", what, err)
	}
}

func TestMain(m *testing.M) {
	if fault == "" {
		fmt.Println("faults: XMITCHECK_FAULT is not set: nothing to do")
		os.Exit(0)
	}
	code := m.Run()
	provoke(nil, "warn-after", "WARNING") // after the last test's window
	os.Exit(code)
}

// TestShown is a test of the seed that saw its behaviour: alone, the seed
// is present.
func TestShown(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	provoke(t, "warn-test", "WARNING")
	provoke(t, "panic", "PANIC")
	provoke(t, "hang", "HUNG_TASK")
	if fault == "lost" {
		observe.Lost(t, "a counter forced to lose 3 events")
	}
	observe.Shows(t, feature.Seed000Tun, "the fault binary's stand-in for the seed")
}

// TestProbe has a subtest that a probe skips; the kernel warns first.
func TestProbe(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	t.Run("tap", func(t *testing.T) {
		provoke(t, "warn-skip", "WARNING")
		if fault == "no-tun" {
			if err := os.Remove("/dev/net/tun"); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			observe.Require(t, tuntap.ProbeBackpressure())
		}
		if fault == "warn-skip" {
			observe.Require(t, feature.Unsupported(feature.FqCodel, "forced by the fault binary"))
		}
		t.Skip("the fault binary probes nothing here")
	})
}

// TestBetween warns before its own window opens: after TestProbe's closed.
func TestBetween(t *testing.T) {
	provoke(t, "warn-between", "WARNING")
	observe.Of(t, feature.Seed000Tun)
}

// TestTeardown warns from a cleanup: its teardown, inside its window.
func TestTeardown(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	t.Cleanup(func() { provoke(t, "warn-teardown", "WARNING") })
}
