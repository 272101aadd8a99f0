package vmtest

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// fakeQEMU writes a qemu whose -L help lists dirs.
func fakeQEMU(t *testing.T, dirs ...string) string {
	t.Helper()
	script := "#!/bin/sh\n"
	for _, d := range dirs {
		script += "echo '" + d + "'\n"
	}
	p := filepath.Join(t.TempDir(), "qemu-system-x86_64")
	assert.NilError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

func TestFindFirmware(t *testing.T) {
	empty, data := t.TempDir(), t.TempDir()
	rom := filepath.Join(data, qbootFile)
	assert.NilError(t, os.WriteFile(rom, []byte("rom"), 0o644))
	assert.Check(t, is.Equal(findFirmware(fakeQEMU(t, empty, data)), rom), "the first data dir with qboot")
	assert.Check(t, is.Equal(findFirmware(fakeQEMU(t, empty)), ""), "no qboot: qemu's default BIOS")
	assert.Check(t, is.Equal(findFirmware(filepath.Join(empty, "no-qemu")), ""), "qemu that does not run")

	spaced := filepath.Join(t.TempDir(), "a dir")
	assert.NilError(t, os.Mkdir(spaced, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(spaced, qbootFile), nil, 0o644))
	assert.Check(t, is.Equal(findFirmware(fakeQEMU(t, spaced)), ""), "vng splits --qemu-opts at spaces")
}

func TestHalted(t *testing.T) {
	for line, want := range map[string]bool{
		"[   12.345678] reboot: System halted":                             true,
		"[    9.1] reboot: Power off not available: System halted instead": true,
		"reboot: Power down":                 false,
		"xmitcheck guest: System halted now": false,
	} {
		assert.Check(t, is.Equal(halted(line), want), line)
	}
}
