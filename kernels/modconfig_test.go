package kernels

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestUnloadableModules(t *testing.T) {
	dir := t.TempDir()
	vmlinuz := filepath.Join(dir, "vmlinuz-7.3.4")
	assert.NilError(t, os.WriteFile(vmlinuz, nil, 0o644))
	// The image was copied into the cache; the config is beside the path given.
	k := &Kernel{Name: vmlinuz, Release: "7.3.4", Vmlinuz: filepath.Join(t.TempDir(), "boot", "vmlinuz-7.3.4")}
	names := []string{"virtio_pci", "tun", "vhost_net", "veth", "geneve"}
	assert.Check(t, is.Len(UnloadableModules(k, names), 0), "no config beside the image: nothing known")

	config := "CONFIG_MODULES=y\nCONFIG_VIRTIO_PCI=y\nCONFIG_TUN=m\nCONFIG_VHOST_NET=m\n# CONFIG_VETH is not set\n"
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "config-7.3.4"), []byte(config), 0o644))
	assert.Check(t, is.DeepEqual(UnloadableModules(k, names), []string{"tun", "vhost_net"}),
		"built in (y) and absent options are not the missing directory's")

	k.ModulesDir = filepath.Join(dir, "lib/modules/7.3.4")
	assert.Check(t, is.Len(UnloadableModules(k, names), 0), "with a modules directory the guest loads them")
}

// TestEveryGuestModuleHasItsOption keeps moduleOption in step with
// GuestModules: a module without its option would never be reported.
func TestEveryGuestModuleHasItsOption(t *testing.T) {
	for _, m := range GuestModules {
		assert.Check(t, moduleOption[m] != "", "%s has no config option in moduleOption", m)
	}
	assert.Check(t, is.Len(moduleOption, len(GuestModules)), "moduleOption lists a module GuestModules does not")
}
