package kernels

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

// fakeBzImage is the smallest file bzImageRelease accepts: a setup header
// with "HdrS", boot protocol 2.15 and kernel_version pointing at a string
// like the kernel's own.
func fakeBzImage(release string) []byte {
	img := make([]byte, 0x400)
	copy(img[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(img[0x206:], 0x020f)
	binary.LittleEndian.PutUint16(img[0x20E:], 0x100) // string at 0x300
	copy(img[0x300:], release+" (builder@example.invalid) #1 SMP PREEMPT_DYNAMIC\x00")
	return img
}

// fakeModule is enough of an ELF file for ReadModule and depmod (which
// warns about it and still lists it).
var fakeModule = []byte("\x7fELF\x02\x01\x01\x00fake module")

// writeFiles creates files under dir; a nil content makes a directory.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		path := filepath.Join(dir, name)
		if data == nil {
			assert.NilError(t, os.MkdirAll(path, 0o755))
			continue
		}
		assert.NilError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		assert.NilError(t, os.WriteFile(path, data, 0o644))
	}
}

func needDepmod(t *testing.T) {
	t.Helper()
	if !exists("/sbin/depmod") && !exists("/usr/sbin/depmod") {
		t.Skip("depmod not found: install kmod to test layout normalisation")
	}
}
