package kernels

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestNormalise builds tiny package trees in both Debian layouts and checks
// that each comes out as boot/vmlinuz-R, boot/config-R and lib/modules/R/
// with a modules.dep written by the real depmod.
func TestNormalise(t *testing.T) {
	needDepmod(t)
	for _, tc := range []struct {
		name, release, module string
		files                 map[string][]byte
	}{{
		name: "Old", release: "6.1.0-50-amd64", module: "kernel/drivers/net/tun.ko",
		files: map[string][]byte{
			"boot/vmlinuz-6.1.0-50-amd64":                             fakeBzImage("6.1.0-50-amd64"),
			"boot/config-6.1.0-50-amd64":                              []byte("CONFIG_TUN=m\n"),
			"boot/System.map-6.1.0-50-amd64":                          []byte("ffffffff81000000 T _text\n"),
			"lib/modules/6.1.0-50-amd64/kernel/drivers/net/tun.ko":    fakeModule,
			"lib/modules/6.1.0-50-amd64/modules.builtin":              []byte("kernel/net/packet/af_packet.ko\n"),
			"usr/share/doc/linux-image-6.1.0-50-amd64-unsigned/x.txt": []byte("doc"),
		},
	}, {
		name: "OldUsrMerged", release: "6.12.117+deb13-amd64", module: "kernel/drivers/net/tun.ko.xz",
		files: map[string][]byte{
			"boot/vmlinuz-6.12.117+deb13-amd64":                                 fakeBzImage("6.12.117+deb13-amd64"),
			"boot/config-6.12.117+deb13-amd64":                                  []byte("CONFIG_TUN=m\n"),
			"usr/lib/modules/6.12.117+deb13-amd64/kernel/drivers/net/tun.ko.xz": xzBytes(t, fakeModule),
		},
	}, {
		name: "Split", release: "7.3.4+deb13-amd64", module: "kernel/drivers/net/tun.ko.xz",
		files: map[string][]byte{
			// linux-binary-unsigned, linux-modules and linux-base, extracted together.
			"usr/lib/modules/7.3.4+deb13-amd64/vmlinuz.unsigned":             fakeBzImage("7.3.4+deb13-amd64"),
			"usr/lib/modules/7.3.4+deb13-amd64/kernel/drivers/net/tun.ko.xz": xzBytes(t, fakeModule),
			"usr/lib/modules/7.3.4+deb13-amd64/config":                       []byte("CONFIG_TUN=m\n"),
			"usr/lib/modules/7.3.4+deb13-amd64/System.map":                   []byte("ffffffff81000000 T _text\n"),
			"usr/lib/modules/7.3.4+deb13-amd64/modules.builtin":              []byte("kernel/net/packet/af_packet.ko\n"),
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			src, root := filepath.Join(t.TempDir(), "x"), filepath.Join(t.TempDir(), "root")
			writeFiles(t, src, tc.files)
			release, err := normalise(context.Background(), src, root)
			assert.NilError(t, err)
			assert.Check(t, is.Equal(release, tc.release))

			mods := filepath.Join(root, "lib", "modules", release)
			got, err := os.ReadFile(filepath.Join(root, "boot", "vmlinuz-"+release))
			assert.NilError(t, err)
			assert.Check(t, is.DeepEqual(got, fakeBzImage(release)))
			assert.Check(t, exists(filepath.Join(root, "boot", "config-"+release)), "config not in boot/")
			assert.Check(t, !exists(filepath.Join(mods, "vmlinuz.unsigned")), "the image stayed among the modules")
			assert.Check(t, !exists(filepath.Join(mods, "config")), "the config stayed among the modules")
			assert.Check(t, exists(filepath.Join(mods, tc.module)))
			dep, err := os.ReadFile(filepath.Join(mods, "modules.dep"))
			assert.NilError(t, err, "depmod wrote no modules.dep")
			assert.Check(t, is.Contains(string(dep), tc.module+":"))
			entries, err := os.ReadDir(root)
			assert.NilError(t, err)
			assert.Check(t, is.Len(entries, 2), "root holds only boot/ and lib/: %v", entries)
		})
	}
}

func TestNormaliseErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		want  string
	}{
		{"NoModulesDir", map[string][]byte{"boot/vmlinuz-1.0": fakeBzImage("1.0")},
			"want one lib/modules/RELEASE directory in the package, found 0"},
		{"TwoReleases", map[string][]byte{"lib/modules/1.0": nil, "usr/lib/modules/1.1": nil},
			"found 2"},
		{"NoImage", map[string][]byte{"lib/modules/1.0/kernel/a.ko": fakeModule},
			"no kernel image for 1.0 in the package"},
		{"WrongRelease", map[string][]byte{"boot/vmlinuz-1.0": fakeBzImage("1.1"), "lib/modules/1.0": nil},
			`is release "1.1", not "1.0"`},
		{"NotABzImage", map[string][]byte{"boot/vmlinuz-1.0": []byte("\x7fELF vmlinux"), "lib/modules/1.0": nil},
			`not an x86 bzImage (no "HdrS" at 0x202)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			writeFiles(t, src, tc.files)
			_, err := normalise(context.Background(), src, filepath.Join(t.TempDir(), "root"))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestBzImageRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bzImage")
	assert.NilError(t, os.WriteFile(path, fakeBzImage("7.3.4+deb13-amd64"), 0o644))
	rel, err := bzImageRelease(path)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(rel, "7.3.4+deb13-amd64"))

	short := filepath.Join(t.TempDir(), "short")
	assert.NilError(t, os.WriteFile(short, []byte("HdrS"), 0o644))
	_, err = bzImageRelease(short)
	assert.ErrorContains(t, err, "not an x86 bzImage")
}
