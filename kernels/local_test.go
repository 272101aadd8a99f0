package kernels

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestLocalBzImage(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{"bzImage": fakeBzImage("7.3.0-rc1+")})
	cache := t.TempDir()
	k, err := Resolve(context.Background(), filepath.Join(dir, "bzImage"), Options{CacheDir: cache})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(k.Release, "7.3.0-rc1+"))
	assert.Check(t, is.Equal(k.ModulesDir, ""), "no modules given: everything built in")
	assert.Check(t, is.Equal(filepath.Dir(k.Root), cache))
	assert.Check(t, is.Equal(k.Vmlinuz, filepath.Join(k.Root, "boot", "vmlinuz-7.3.0-rc1+")))
	target, err := os.Readlink(k.Vmlinuz)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(target, filepath.Join(dir, "bzImage")))
	assert.Check(t, is.Equal(k.Label(), filepath.Join(dir, "bzImage")+" (7.3.0-rc1+)"))

	// Resolving again rebuilds the same entry.
	again, err := Resolve(context.Background(), filepath.Join(dir, "bzImage"), Options{CacheDir: cache})
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(again, k))
}

// TestLocalModulesDir: a modules directory without modules.dep is indexed in
// the cache, never in the user's directory.
func TestLocalModulesDir(t *testing.T) {
	needDepmod(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{
		"boot/vmlinuz-6.1.0-50-amd64":                          fakeBzImage("6.1.0-50-amd64"),
		"lib/modules/6.1.0-50-amd64/kernel/drivers/net/tun.ko": fakeModule,
		"lib/modules/6.1.0-50-amd64/modules.builtin":           []byte("kernel/net/packet/af_packet.ko\n"),
		"lib/modules/wrong/kernel/drivers/net/tun.ko":          fakeModule,
	})
	mods := filepath.Join(dir, "lib/modules/6.1.0-50-amd64")
	image := filepath.Join(dir, "boot/vmlinuz-6.1.0-50-amd64")
	k, err := Resolve(context.Background(), image, Options{CacheDir: t.TempDir(), Modules: mods})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(k.ModulesDir, filepath.Join(k.Root, "lib/modules/6.1.0-50-amd64")))
	assert.Check(t, !exists(filepath.Join(mods, "modules.dep")), "depmod wrote into the user's modules directory")
	got, missing, err := ModuleClosure(k.ModulesDir, []string{"tun", "af_packet", "veth"})
	assert.NilError(t, err)
	assert.Check(t, is.Len(got, 1))
	assert.Check(t, is.DeepEqual(missing, []string{"veth"}))
	data, err := ReadModule(got[0].Path)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(data, fakeModule))

	wrong := filepath.Join(dir, "lib/modules/wrong")
	_, err = Resolve(context.Background(), image, Options{CacheDir: t.TempDir(), Modules: wrong})
	assert.ErrorContains(t, err, `is for release "wrong" but`)
	_, err = Resolve(context.Background(), image, Options{CacheDir: t.TempDir(), Modules: filepath.Join(dir, "nope")})
	assert.ErrorContains(t, err, "does not exist: give the kernel's lib/modules/6.1.0-50-amd64")
}

// TestLocalTree: a built tree's modules (modules.order in the 6.2+ ".o"
// form) are laid out as modules_install would, with symlinks into the tree.
func TestLocalTree(t *testing.T) {
	needDepmod(t)
	tree := t.TempDir()
	writeFiles(t, tree, map[string][]byte{
		"arch/x86/boot/bzImage":         fakeBzImage("7.3.0-xmit"),
		"include/config/kernel.release": []byte("7.3.0-xmit\n"),
		"modules.order":                 []byte("drivers/net/tun.o\nnet/sched/sch_netem.o\n"),
		"modules.builtin":               []byte("kernel/net/packet/af_packet.ko\n"),
		"drivers/net/tun.ko":            fakeModule,
		"net/sched/sch_netem.ko":        fakeModule,
	})
	k, err := Resolve(context.Background(), tree, Options{CacheDir: t.TempDir()})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(k.Release, "7.3.0-xmit"))
	target, err := os.Readlink(filepath.Join(k.ModulesDir, "kernel/drivers/net/tun.ko"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(target, filepath.Join(tree, "drivers/net/tun.ko")))
	order, err := os.ReadFile(filepath.Join(k.ModulesDir, "modules.order"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(order), "kernel/drivers/net/tun.ko\nkernel/net/sched/sch_netem.ko\n"))
	mods, missing, err := ModuleClosure(k.ModulesDir, []string{"sch_netem", "tun", "af_packet"})
	assert.NilError(t, err)
	assert.Check(t, is.Len(mods, 2))
	assert.Check(t, is.Len(missing, 0))
}

// TestLocalTreeDot: `--kernel .` in a built tree (where git bisect run and
// a maintainer are) is that tree.
func TestLocalTreeDot(t *testing.T) {
	tree := t.TempDir()
	writeFiles(t, tree, map[string][]byte{
		"arch/x86/boot/bzImage":         fakeBzImage("7.3.0-rc1"),
		"include/config/kernel.release": []byte("7.3.0-rc1\n"),
	})
	t.Chdir(tree)
	k, err := Resolve(context.Background(), ".", Options{CacheDir: t.TempDir()})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(k.Release, "7.3.0-rc1"))
	assert.Check(t, is.Equal(k.Label(), ". (7.3.0-rc1)"))
	target, err := filepath.EvalSymlinks(k.Vmlinuz)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(target, filepath.Join(tree, "arch/x86/boot/bzImage")))
}

func TestLocalTreeAllBuiltIn(t *testing.T) {
	tree := t.TempDir()
	writeFiles(t, tree, map[string][]byte{
		"arch/x86/boot/bzImage":         fakeBzImage("7.3.0"),
		"include/config/kernel.release": []byte("7.3.0\n"),
		"modules.order":                 []byte{},
	})
	k, err := Resolve(context.Background(), tree, Options{CacheDir: t.TempDir()})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(k.ModulesDir, ""))
	assertBzImage(t, k.Vmlinuz)
}

func TestLocalTreeErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		want  string
	}{
		{"NotATree", map[string][]byte{"README": []byte("x")}, "is not a built kernel tree: it has no arch/x86/boot/bzImage"},
		{"NoRelease", map[string][]byte{"arch/x86/boot/bzImage": fakeBzImage("7.3.0")}, "kernel.release"},
		{"StaleRelease", map[string][]byte{
			"arch/x86/boot/bzImage":         fakeBzImage("7.3.0"),
			"include/config/kernel.release": []byte("7.3.1\n"),
		}, `is release "7.3.0", not "7.3.1"`},
		{"ModuleNotBuilt", map[string][]byte{
			"arch/x86/boot/bzImage":         fakeBzImage("7.3.0"),
			"include/config/kernel.release": []byte("7.3.0\n"),
			"modules.order":                 []byte("drivers/net/tun.o\n"),
		}, "lists drivers/net/tun.ko, which is not built: run make modules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := t.TempDir()
			writeFiles(t, tree, tc.files)
			_, err := Resolve(context.Background(), tree, Options{CacheDir: t.TempDir()})
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
