package lava

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/kernels"
)

// tarNames lists a tar's entries.
func tarNames(t *testing.T, data []byte) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		assert.NilError(t, err)
		out[h.Name] = true
		assert.Check(t, is.Equal(h.Uid, 0), h.Name)
	}
}

func TestWriteTreeTar(t *testing.T) {
	root := t.TempDir()
	assert.NilError(t, os.MkdirAll(filepath.Join(root, "xmitcheck", "bin"), 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(root, "run_kselftest.sh"), []byte("#!/bin/sh\n"), 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(root, "xmitcheck", "bin", "tun.test"), []byte("ELF"), 0o755))
	assert.NilError(t, os.Symlink("run_kselftest.sh", filepath.Join(root, "link")))
	var b bytes.Buffer
	assert.NilError(t, WriteTreeTar(&b, root))
	assert.Check(t, is.DeepEqual(tarNames(t, b.Bytes()), map[string]bool{
		"run_kselftest.sh": true, "xmitcheck/": true, "xmitcheck/bin/": true, "xmitcheck/bin/tun.test": true,
	}), "paths below the tree, no symbolic link")
}

// TestWriteModulesTar: the modules the suites need and their dependencies,
// with modules.dep and modules.builtin, under lib/modules/RELEASE.
func TestWriteModulesTar(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lib", "modules", "6.1.0-50-amd64")
	src := "../../../kernels/testdata/modules/6.1.0-50-amd64"
	for _, f := range []string{"modules.dep", "modules.builtin"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		assert.NilError(t, err)
		assert.NilError(t, os.MkdirAll(dir, 0o755))
		assert.NilError(t, os.WriteFile(filepath.Join(dir, f), data, 0o644))
	}
	k := &kernels.Kernel{Release: "6.1.0-50-amd64", ModulesDir: dir}
	_, err := WriteModulesTar(io.Discard, k, []string{"vhost_net"})
	assert.Check(t, errors.Is(err, fs.ErrNotExist), "a module file missing is an error: %v", err)

	for _, f := range []string{"drivers/net/tun.ko", "drivers/vhost/vhost_iotlb.ko", "drivers/vhost/vhost.ko",
		"drivers/net/tap.ko", "drivers/vhost/vhost_net.ko"} {
		p := filepath.Join(dir, "kernel", f)
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte(f), 0o644))
	}
	var b bytes.Buffer
	held, err := WriteModulesTar(&b, k, []string{"vhost_net", "af_packet"})
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(held, []string{"tun", "vhost_iotlb", "vhost", "tap", "vhost_net"}),
		"dependencies first; af_packet is built in")
	names := tarNames(t, b.Bytes())
	assert.Check(t, names["lib/modules/6.1.0-50-amd64/modules.dep"])
	assert.Check(t, names["lib/modules/6.1.0-50-amd64/modules.builtin"])
	assert.Check(t, names["lib/modules/6.1.0-50-amd64/kernel/drivers/vhost/vhost_net.ko"])
	assert.Check(t, is.Len(names, 7))

	held, err = WriteModulesTar(io.Discard, &kernels.Kernel{Release: "7.3.4"}, []string{"tun"})
	assert.NilError(t, err)
	assert.Check(t, is.Len(held, 0), "a kernel with everything built in has no modules to carry")
}

// TestWriteRamdisk: a gzipped newc cpio with the console node, busybox
// and the init; a dynamically linked busybox is refused.
func TestWriteRamdisk(t *testing.T) {
	dir := t.TempDir()
	static := filepath.Join(dir, "busybox")
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\nfunc main() {}\n"), 0o644))
	build := exec.Command("go", "build", "-o", static, "main.go")
	build.Dir, build.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	out, err := build.CombinedOutput()
	assert.NilError(t, err, "%s", out)
	var b bytes.Buffer
	assert.NilError(t, WriteRamdisk(&b, static))
	zr, err := gzip.NewReader(&b)
	assert.NilError(t, err)
	data, err := io.ReadAll(zr)
	assert.NilError(t, err)
	entries := cpioEntries(t, data)
	assert.Check(t, is.Equal(entries["init"], ramdiskInit))
	assert.Check(t, is.Contains(entries, "dev/console"))
	assert.Check(t, is.Contains(entries, "bin/busybox"))
	assert.Check(t, is.Contains(ramdiskInit, "ln -sf /proc/self/fd/1 /dev/stdout"), "the runner writes there")

	dynamic := filepath.Join(t.TempDir(), "busybox")
	assert.NilError(t, os.WriteFile(dynamic, []byte("not an ELF"), 0o755))
	assert.ErrorContains(t, WriteRamdisk(io.Discard, dynamic), "busybox-static")
}

// cpioEntries reads a newc archive: each entry's name and contents.
func cpioEntries(t *testing.T, data []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	pad := func(n int) int { return (n + 3) &^ 3 }
	for off := 0; ; {
		assert.Assert(t, len(data) >= off+110 && string(data[off:off+6]) == "070701", "a newc header at %d", off)
		field := func(i int) int {
			v, err := strconv.ParseUint(string(data[off+6+8*i:off+14+8*i]), 16, 32)
			assert.NilError(t, err)
			return int(v)
		}
		size, namesize := field(6), field(11)
		name := string(data[off+110 : off+110+namesize-1])
		body := pad(off + 110 + namesize)
		if name == "TRAILER!!!" {
			return out
		}
		out[name] = string(data[body : body+size])
		off = pad(body + size)
		assert.Assert(t, off <= len(data), fmt.Sprintf("entry %s runs past the end", name))
	}
}
