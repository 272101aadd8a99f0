package instrument

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// ErrObject is wrapped by the error of a BPF object, compiled into the test
// binary, that the loader cannot parse: its file in the suites' source was
// cut or replaced (a full disk, an interrupted copy, a Git LFS pointer).
// That is the harness's fault, never the kernel's.
var ErrObject = errors.New("the BPF object compiled into this test binary does not parse")

// Spec parses object (what says which: "bpf/devmap.c") with load, a
// bpf2go loader; a failure wraps ErrObject.
func Spec(what string, load func() (*ebpf.CollectionSpec, error)) (*ebpf.CollectionSpec, error) {
	spec, err := load()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v (rebuild it from a clean source: its .o file is damaged)", what, ErrObject, err)
	}
	return spec, nil
}

// Cause is the fault of err, an instrument that could not be set up: the
// harness's when its object did not parse, else the environment's (no
// BTF, a kprobe that cannot attach).
func Cause(err error) feature.Fault {
	if errors.Is(err, ErrObject) {
		return feature.Harness
	}
	return feature.Environment
}
