package kernels

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestModuleClosure resolves names against the modules.dep and
// modules.builtin recorded from Debian's 6.1.0-50 kernel.
func TestModuleClosure(t *testing.T) {
	dir, err := filepath.Abs("testdata/modules/6.1.0-50-amd64")
	assert.NilError(t, err)
	mods, missing, err := ModuleClosure(dir, []string{
		"virtio_console", "vhost-net", "sch_fq_codel", "no_such_module", "tun", "af_packet", "virtio_pci", "also_missing",
	})
	assert.NilError(t, err)
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
		assert.Check(t, is.Equal(filepath.Dir(m.Path)[:len(dir)], dir), "%s outside the modules dir", m.Path)
	}
	// Dependencies first, in modules.dep order, each once; built-ins
	// (sch_fq_codel, af_packet) neither loaded nor missing.
	assert.Check(t, is.DeepEqual(names, []string{
		"virtio_ring", "virtio", "virtio_console",
		"tun", "vhost_iotlb", "vhost", "tap", "vhost_net",
		"virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci",
	}))
	assert.Check(t, is.DeepEqual(missing, []string{"no_such_module", "also_missing"}))
	assert.Check(t, is.Equal(mods[len(mods)-1].Path, filepath.Join(dir, "kernel/drivers/virtio/virtio_pci.ko")))
}

func TestModuleClosureErrors(t *testing.T) {
	_, _, err := ModuleClosure(t.TempDir(), []string{"tun"})
	assert.ErrorContains(t, err, "run depmod")

	cycle := t.TempDir()
	writeFiles(t, cycle, map[string][]byte{"modules.dep": []byte("a.ko: b.ko\nb.ko: a.ko\n")})
	_, _, err = ModuleClosure(cycle, []string{"a"})
	assert.ErrorContains(t, err, "dependency cycle a → b → a")

	dangling := t.TempDir()
	writeFiles(t, dangling, map[string][]byte{"modules.dep": []byte("a.ko: b.ko\n")})
	_, _, err = ModuleClosure(dangling, []string{"a"})
	assert.ErrorContains(t, err, "a depends on b, which has no line of its own")

	garbage := t.TempDir()
	writeFiles(t, garbage, map[string][]byte{"modules.dep": []byte("no colon\n")})
	_, _, err = ModuleClosure(garbage, []string{"a"})
	assert.ErrorContains(t, err, "modules.dep:1")
}

// TestReadModule writes one module in each form the kernel packages use and
// reads the same ELF bytes back.
func TestReadModule(t *testing.T) {
	dir := t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write(fakeModule)
	assert.NilError(t, err)
	assert.NilError(t, zw.Close())
	writeFiles(t, dir, map[string][]byte{
		"tun.ko":     fakeModule,
		"tun.ko.xz":  xzBytes(t, fakeModule),
		"tun.ko.zst": zstdBytes(t, fakeModule),
		"tun.ko.gz":  gz.Bytes(),
		"bad.ko":     []byte("not an ELF file"),
		"bad.ko.xz":  fakeModule,
		"tun.o":      fakeModule,
	})
	for _, name := range []string{"tun.ko", "tun.ko.xz", "tun.ko.zst", "tun.ko.gz"} {
		got, err := ReadModule(filepath.Join(dir, name))
		assert.Check(t, err, name)
		assert.Check(t, is.DeepEqual(got, fakeModule), name)
	}
	for name, want := range map[string]string{
		"bad.ko":    "does not hold an ELF module",
		"bad.ko.xz": "bad.ko.xz",
		"tun.o":     "is not a module file",
	} {
		_, err := ReadModule(filepath.Join(dir, name))
		assert.Check(t, is.ErrorContains(err, want), name)
	}
	_, err = ReadModule(filepath.Join(dir, "missing.ko"))
	assert.Check(t, os.IsNotExist(err), "%v", err)
}

func xzBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	// The kernel's modules_install uses xz --check=crc32.
	w, err := xz.WriterConfig{CheckSum: xz.CRC32}.NewWriter(&b)
	assert.NilError(t, err)
	_, err = w.Write(data)
	assert.NilError(t, err)
	assert.NilError(t, w.Close())
	return b.Bytes()
}

func zstdBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	assert.NilError(t, err)
	defer enc.Close()
	return enc.EncodeAll(data, nil)
}
