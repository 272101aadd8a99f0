package kernels

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestMissingModules(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	vmlinuz := filepath.Join(dir, "vmlinuz-7.3.4-test")
	assert.NilError(t, os.WriteFile(vmlinuz, nil, 0o644))
	// The image was copied into the cache; the config is beside the path given.
	k := &Kernel{Name: vmlinuz, Release: "7.3.4-test", Vmlinuz: filepath.Join(t.TempDir(), "boot", "vmlinuz-7.3.4-test")}
	names := []string{"virtio_pci", "tun", "vhost_net", "veth", "geneve"}
	why, _ := MissingModules(k, names)
	assert.Check(t, is.Equal(why, ""), "no config and no image to read: nothing known")

	config := "CONFIG_MODULES=y\nCONFIG_VIRTIO_PCI=y\nCONFIG_TUN=m\nCONFIG_VHOST_NET=m\n# CONFIG_VETH is not set\n"
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "config-7.3.4-test"), []byte(config), 0o644))
	why, _ = MissingModules(k, names)
	assert.Check(t, is.Equal(why, vmlinuz+" builds tun, vhost_net as modules ("+dir+"/config-7.3.4-test)"),
		"built in (y) and absent options are not the missing directory's")

	k.ModulesDir = filepath.Join(dir, "lib/modules/7.3.4-test")
	why, _ = MissingModules(k, names)
	assert.Check(t, is.Equal(why, ""), "with a modules directory the guest loads them")
}

// TestMissingModulesNoConfig: a Debian image copied alone, with no config
// beside it, is known to take modules from the image itself; a build with
// everything built in (no CONFIG_MODULES) is not.
func TestMissingModulesNoConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a cached Debian kernel")
	}
	cache, err := DefaultCacheDir()
	assert.NilError(t, err)
	images, _ := filepath.Glob(filepath.Join(cache, "debian-7.3", "boot", "vmlinuz-*"))
	if len(images) == 0 {
		t.Skip("debian:7.3 is not cached: xmitcheck kernels fetch debian:7.3")
	}
	if built, _ := filepath.Glob(filepath.Join(filepath.Dir(cache), "builds", "*", "bzImage")); len(built) > 0 {
		yes, err := takesModules(built[0])
		assert.NilError(t, err)
		assert.Check(t, !yes, "%s takes no modules (kernels build builds everything in)", built[0])
	}
	copied := filepath.Join(t.TempDir(), filepath.Base(images[0]))
	data, err := os.ReadFile(images[0])
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(copied, data, 0o644))
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // no cached config of the release either
	k := &Kernel{Name: copied, Release: "no-such-release", Vmlinuz: copied}
	why, _ := MissingModules(k, []string{"tun", "veth"})
	assert.Check(t, is.Equal(why, copied+" takes modules (CONFIG_MODULES, read in its image) and has no config "+
		"to say which drivers are modules"))
}

// TestEveryGuestModuleHasItsOption keeps moduleOption in step with
// GuestModules: a module without its option would never be reported.
func TestEveryGuestModuleHasItsOption(t *testing.T) {
	for _, m := range GuestModules {
		assert.Check(t, moduleOption[m] != "", "%s has no config option in moduleOption", m)
	}
	assert.Check(t, is.Len(moduleOption, len(GuestModules)), "moduleOption lists a module GuestModules does not")
}

// TestReadConfig reads a plain config and a gzipped one (/proc/config.gz).
func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	text := "CONFIG_TUN=y\n# CONFIG_VETH is not set\nCONFIG_VHOST_NET=m\n"
	plain := filepath.Join(dir, "config")
	assert.NilError(t, os.WriteFile(plain, []byte(text), 0o644))
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(text))
	assert.NilError(t, zw.Close())
	gz := filepath.Join(dir, "config.gz")
	assert.NilError(t, os.WriteFile(gz, b.Bytes(), 0o644))
	for _, p := range []string{plain, gz} {
		c, err := ReadConfig(p)
		assert.NilError(t, err, p)
		assert.Check(t, is.DeepEqual(c, map[string]string{"CONFIG_TUN": "y", "CONFIG_VHOST_NET": "m"}), p)
	}
	_, err := ReadConfig(filepath.Join(dir, "none"))
	assert.Check(t, os.IsNotExist(err))
	assert.NilError(t, os.WriteFile(gz, []byte(text), 0o644))
	_, err = ReadConfig(gz)
	assert.ErrorContains(t, err, "config.gz")
	assert.Check(t, is.Equal(ModuleOption("vhost-net"), "CONFIG_VHOST_NET"))
	assert.Check(t, is.Equal(ModuleOption("geneve"), ""))
}

// TestSuiteModules: every suite's modules are guest modules (each with its
// option), and every suite has its list.
func TestSuiteModules(t *testing.T) {
	suites, err := filepath.Glob("../suites/*")
	assert.NilError(t, err)
	assert.Check(t, is.Len(SuiteModules, len(suites)))
	for _, s := range suites {
		mods, ok := SuiteModules[filepath.Base(s)]
		assert.Check(t, ok, "suites/%s has no SuiteModules line", filepath.Base(s))
		for _, m := range mods {
			assert.Check(t, slices.Contains(GuestModules, m), "%s: %s is not a guest module", s, m)
		}
	}
}
