package qdisc

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// probeDeferList reports whether the running kernel's struct Qdisc has a
// defer_list member (seed 003 and the llist enqueue it builds on), read off
// the kernel's BTF. It returns nil when it has, an error matching
// feature.ErrNotSupported when it has not, and a real error when BTF cannot
// be read.
func probeDeferList() error {
	spec, err := instrument.KernelBTF.Kernel()
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
	return feature.Unsupported(feature.QdiscDeferList, "BTF struct Qdisc (%d members) has no defer_list", len(q.Members))
}

// TestDeferList probes for the struct member seed 003's fast path reads:
// a kernel without it cannot have the seed (003 absent, naming this probe),
// and one expected to have it fails. Whether the fast path is live is
// TestFastPath's to observe, never inferred from the member.
func TestDeferList(t *testing.T) {
	observe.Of(t, feature.Seed003)
	observe.Probe(t, feature.QdiscDeferList, probeDeferList())
	t.Log("struct Qdisc has defer_list")
}
