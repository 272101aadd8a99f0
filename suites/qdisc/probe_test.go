package qdisc

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// probeDeferList reports whether the running kernel's struct Qdisc has a
// defer_list member (seed 003 and the llist enqueue it builds on), read off
// the kernel's BTF. It returns nil when it has, an error matching
// feature.ErrNotSupported when it has not, and a real error when BTF cannot
// be read.
func probeDeferList() error {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("load kernel BTF (/sys/kernel/btf/vmlinux; needs CONFIG_DEBUG_INFO_BTF and sysfs mounted): %w", err)
	}
	var q *btf.Struct
	if err := spec.TypeByName("Qdisc", &q); err != nil {
		return fmt.Errorf("kernel BTF has no struct Qdisc: %w", err)
	}
	for _, m := range q.Members {
		if m.Name == "defer_list" {
			return nil
		}
	}
	return feature.Unsupported("Qdisc.defer_list", "BTF struct Qdisc (%d members) has no defer_list", len(q.Members))
}

// TestDeferList states whether the seed 003 fast path can exist on this
// kernel. It is a fact for the log, never a reason to skip: the no-stall
// tests run everywhere. It fails only when BTF cannot be read, or when the
// kernel is expected to have defer_list and has not.
func TestDeferList(t *testing.T) {
	err := probeDeferList()
	switch {
	case err == nil:
		t.Log("struct Qdisc has defer_list: __netif_schedule() may skip NET_TX_SOFTIRQ (seed 003 fast path is live)")
	case errors.Is(err, feature.ErrNotSupported):
		if feature.Expected("Qdisc.defer_list") {
			t.Fatalf("%v, but %s is expected to have it", err, os.Getenv(feature.KernelEnv))
		}
		t.Logf("%v: every __netif_schedule() raises NET_TX_SOFTIRQ (no seed 003 fast path)", err)
	default:
		t.Fatal(err)
	}
}
