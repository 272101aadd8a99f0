package devmap

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/cilium/ebpf"

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
		shared.err = loadBpfObjects(&shared.objs, instrument.LoadOptions())
		if shared.err == nil {
			testmain.AtEnd(shared.objs.Close)
		}
	})
	return shared.objs, shared.err
}

// rigNS is the namespace every rig of the binary is built in
// (netenv.Shared): a rig deletes its devices as it ends (deleteLinks), which
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
// zero, no entry in a hash or a devmap. A rig's programs are detached by
// then (their devices went with the last test's namespace), so nothing
// writes meanwhile.
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
