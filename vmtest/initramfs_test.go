package vmtest

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest/guest"
)

// fakeModules writes a lib/modules/V tree with tun (no deps) and vhost_net
// (deps vhost, tun), with tiny ELF-headed files for modules.
func fakeModules(t *testing.T) *kernels.Kernel {
	root := t.TempDir()
	dir := filepath.Join(root, "lib", "modules", "1.0")
	files := map[string]string{
		"kernel/drivers/net/tun.ko":         "\x7fELFtun",
		"kernel/drivers/vhost/vhost.ko":     "\x7fELFvhost",
		"kernel/drivers/vhost/vhost_net.ko": "\x7fELFvhost_net",
	}
	for p, data := range files {
		assert.NilError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		assert.NilError(t, os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644))
	}
	dep := "kernel/drivers/net/tun.ko:\n" +
		"kernel/drivers/vhost/vhost.ko:\n" +
		"kernel/drivers/vhost/vhost_net.ko: kernel/drivers/vhost/vhost.ko kernel/drivers/net/tun.ko\n"
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "modules.dep"), []byte(dep), 0o644))
	return &kernels.Kernel{Name: "fake", Release: "1.0", Root: root, ModulesDir: dir}
}

// staticELF writes the smallest ELF header debug/elf accepts: an x86-64
// executable with no program headers, so no PT_INTERP.
func staticELF(t *testing.T) string {
	h := make([]byte, 64)
	copy(h, "\x7fELF\x02\x01\x01")
	binary.LittleEndian.PutUint16(h[16:], uint16(elf.ET_EXEC))
	binary.LittleEndian.PutUint16(h[18:], uint16(elf.EM_X86_64))
	binary.LittleEndian.PutUint32(h[20:], 1)
	binary.LittleEndian.PutUint16(h[52:], 64) // e_ehsize
	binary.LittleEndian.PutUint16(h[54:], 56) // e_phentsize
	binary.LittleEndian.PutUint16(h[58:], 64) // e_shentsize
	p := filepath.Join(t.TempDir(), "static")
	assert.NilError(t, os.WriteFile(p, h, 0o755))
	return p
}

func TestInitramfsContents(t *testing.T) {
	self := staticELF(t)
	k := fakeModules(t)
	job := Job{
		Binaries: []Binary{{Name: "pkg/a", Path: self, Args: []string{"-test.v"}}},
		Modules:  []string{"vhost_net", "sch_fq_codel"},
		Env:      []string{"XMITCHECK_KERNEL=fake"},
	}
	var buf bytes.Buffer
	ir, err := writeInitramfs(&buf, self, k, job)
	assert.NilError(t, err)
	entries, err := readCPIO(buf.Bytes())
	assert.NilError(t, err)

	byName := map[string]cpioEntry{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	assert.Check(t, is.Equal(byName["dev/console"].Mode, uint32(cpioChar|0o600)))
	assert.Check(t, is.Equal(byName["init"].Mode, uint32(cpioReg|0o755)))
	selfData, err := os.ReadFile(self)
	assert.NilError(t, err)
	assert.Check(t, bytes.Equal(byName["init"].Data, selfData), "init is the given binary")

	var spec guest.Spec
	assert.NilError(t, json.Unmarshal(byName[strings.TrimPrefix(guest.SpecPath, "/")].Data, &spec))
	assert.Check(t, is.DeepEqual(spec.Env, job.Env))
	assert.Assert(t, is.Len(spec.Binaries, 1))
	assert.Check(t, is.Equal(spec.Binaries[0].Name, "pkg/a"))
	assert.Check(t, is.DeepEqual(spec.Binaries[0].Args, []string{"-test.v"}))
	assert.Check(t, bytes.Equal(byName[strings.TrimPrefix(spec.Binaries[0].Path, "/")].Data, selfData))

	// Dependencies come first; only the closure is packed; each module
	// file is the decompressed ELF.
	var names []string
	for _, m := range spec.Modules {
		names = append(names, m.Name)
		data := byName[strings.TrimPrefix(m.Path, "/")].Data
		assert.Check(t, bytes.HasPrefix(data, []byte("\x7fELF")), "%s", m.Path)
	}
	assert.Check(t, is.DeepEqual(names, []string{"vhost", "tun", "vhost_net"}))
	var kos int
	for name := range byName {
		if strings.HasSuffix(name, ".ko") {
			kos++
		}
	}
	assert.Check(t, is.Equal(kos, 3), "only the closure is packed")
	assert.Check(t, is.DeepEqual(ir.missing, []string{"virtio_pci", "virtio_console", "sch_fq_codel"}))
}

func TestInitramfsRefusesDynamicBinaries(t *testing.T) {
	k := fakeModules(t)
	dyn := "/bin/sh"
	if _, err := os.Stat(dyn); err != nil {
		t.Skipf("no %s to stand for a dynamically linked binary", dyn)
	}
	_, err := writeInitramfs(&bytes.Buffer{}, staticELF(t), k, Job{Binaries: []Binary{{Name: "sh", Path: dyn}}})
	assert.ErrorContains(t, err, "CGO_ENABLED=0")
}
