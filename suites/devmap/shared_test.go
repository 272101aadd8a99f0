package devmap

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/testmain"
)

// shared is the one load of bpf/devmap.c a test binary makes. Verifying
// its programs is most of what a rig costs (on a host, 0.16–0.25 s of a
// TestOrdering subtest's 0.28 s; under the emulator the same share of
// several times that), and nothing in a program changes while it runs:
// what a rig needs fresh is the maps, which resetMaps gives back as a new
// load leaves them. The programs and maps close when the binary's tests
// have ended, before its leak check.
var shared struct {
	once sync.Once
	objs bpfObjects
	err  error
}

// loadShared returns the binary's bpf/devmap.c objects, loaded at the
// first call; resetMaps gives a rig their maps fresh.
func loadShared() (bpfObjects, error) {
	shared.once.Do(func() {
		spec, err := instrument.Spec("bpf/devmap.c", loadBpf)
		if err == nil {
			err = spec.LoadAndAssign(&shared.objs, instrument.LoadOptions())
		}
		shared.err = err
		if shared.err == nil {
			testmain.AtEnd(shared.objs.Close)
		}
	})
	return shared.objs, shared.err
}

// flushCounter is the binary's one attachment of the xdp_devmap_xmit
// counter to its raw tracepoint, made for the first traced rig: every rig
// shares it, since a second attachment of the program would log each flush
// twice. It counts flushes from the devices the watch map names, and the
// rigs that wait for their next test (pool_test.go) flush nothing.
var flushCounter struct {
	once sync.Once
	err  error
}

// attachFlushCounter attaches the xdp_devmap_xmit counter at the first
// call, until the binary's tests have ended.
func attachFlushCounter(objs *bpfObjects) error {
	flushCounter.once.Do(func() {
		tp, err := link.AttachRawTracepoint(link.RawTracepointOptions{
			Name:    "xdp_devmap_xmit",
			Program: objs.TraceDevmapXmit,
		})
		if err != nil {
			flushCounter.err = fmt.Errorf("attach raw tracepoint xdp_devmap_xmit: %w (needs CONFIG_BPF_EVENTS)", err)
			return
		}
		testmain.AtEnd(tp.Close)
	})
	return flushCounter.err
}

// rigNS is the namespace every rig of the binary is built in
// (netenv.Shared): a rig deletes its devices as it ends (rig.close), which
// leaves the namespace as the rig found it, and newRig checks that it does.
var rigNS struct {
	once sync.Once
	env  *netenv.Env
	err  error
}

// rigNamespace returns the rigs' namespace, made at the first call.
func rigNamespace() (*netenv.Env, error) {
	rigNS.once.Do(func() {
		var close func() error
		if rigNS.env, close, rigNS.err = netenv.Shared(); rigNS.err == nil {
			testmain.AtEnd(close)
		}
	})
	return rigNS.env, rigNS.err
}

// resetMaps leaves every map of m as a fresh load does: each array entry
// zero, no entry in a hash or a devmap. No program writes meanwhile: the
// last test's rig has gone with its devices, or is kept idle
// (pool_test.go).
func resetMaps(m *bpfMaps) error {
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		mp, ok := v.Field(i).Interface().(*ebpf.Map)
		if !ok || mp == nil {
			continue
		}
		if err := resetMap(mp); err != nil {
			return fmt.Errorf("reset map %s: %w", v.Type().Field(i).Name, err)
		}
	}
	return nil
}

func resetMap(m *ebpf.Map) error {
	if m.Type() == ebpf.Array {
		n := int(m.MaxEntries())
		keys := make([]uint32, n)
		for i := range keys {
			keys[i] = uint32(i)
		}
		value := reflect.ArrayOf(int(m.ValueSize()), reflect.TypeFor[byte]())
		zeros := reflect.MakeSlice(reflect.SliceOf(value), n, n).Interface()
		if _, err := m.BatchUpdate(keys, zeros, nil); !errors.Is(err, ebpf.ErrNotSupported) {
			return err
		}
		zero := make([]byte, m.ValueSize())
		for i := range keys {
			if err := m.Update(keys[i], zero, ebpf.UpdateExist); err != nil {
				return err
			}
		}
		return nil
	}
	// Hashes and devmaps: take the keys first, then delete them (deleting
	// while iterating can restart a hash's walk). A devmap's walk gives
	// every index, set or not.
	var keys [][]byte
	key := make([]byte, m.KeySize())
	it := m.Iterate()
	for it.Next(&key, new([]byte)) {
		keys = append(keys, append([]byte(nil), key...))
	}
	if err := it.Err(); err != nil {
		return err
	}
	for _, k := range keys {
		if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
	}
	return nil
}
