package feature

import (
	"errors"
	"os"
	"testing"
)

// KernelEnv is the environment variable through which the runner tells a
// test binary which catalog kernel it runs on ("debian:7.3"). Outside the
// runner it is unset and no expectation applies.
const KernelEnv = "XMITCHECK_KERNEL"

// expected lists, per catalog kernel, the features whose absence is a
// failure there. It is the project's statement of what each kernel contains
// (see ../shared/kernels.md), kept apart from the probes that observe it.
var expected = map[string][]string{
	"debian:7.3":  {"IFF_BACKPRESSURE", "vhost-net", "fq_codel", "Qdisc.defer_list", "XDP live frames", "BPF_F_BROADCAST"},
	"debian:7.2":  {"vhost-net", "fq_codel", "Qdisc.defer_list", "XDP live frames", "BPF_F_BROADCAST"},
	"debian:6.12": {"vhost-net", "fq_codel", "XDP live frames", "BPF_F_BROADCAST"},
	"debian:6.1":  {"vhost-net", "fq_codel", "XDP live frames", "BPF_F_BROADCAST"},
	"debian:5.10": {"vhost-net", "fq_codel"},
}

// Expected reports whether the kernel named by $XMITCHECK_KERNEL is expected
// to have feature.
func Expected(feature string) bool {
	for _, f := range expected[os.Getenv(KernelEnv)] {
		if f == feature {
			return true
		}
	}
	return false
}

// Require skips the test when err says the feature is not supported, and
// fails it when the kernel was expected to have the feature or when err is a
// real error. A nil err returns at once.
func Require(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	var ue *UnsupportedError
	if !errors.As(err, &ue) {
		tb.Fatalf("probe failed: %v", err)
	}
	if Expected(ue.Feature) {
		tb.Fatalf("%v, but %s is expected to have it", err, os.Getenv(KernelEnv))
	}
	tb.Skip(err.Error())
}
