package instrument

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cilium/ebpf"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// TestSpecCutObject: an object cut short, as a full disk leaves it (an ELF
// header and zeros), is the harness's fault; a loader's other failures are
// the environment's.
func TestSpecCutObject(t *testing.T) {
	cut := append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 93)...)
	load := func() (*ebpf.CollectionSpec, error) { return ebpf.LoadCollectionSpecFromReader(bytes.NewReader(cut)) }
	_, err := Spec("bpf/wake.c", load)
	assert.Check(t, errors.Is(err, ErrObject))
	assert.Check(t, is.ErrorContains(err, "bpf/wake.c: the BPF object compiled into this test binary does not parse"))
	assert.Check(t, is.Equal(Cause(err), feature.Harness))
	assert.Check(t, is.Equal(Cause(errors.New("attach kprobe: no such function")), feature.Environment))
}
