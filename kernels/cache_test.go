package kernels

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// buildEntry makes a complete catalog entry for debian:7.3 in cache, as
// fetch would, from a tiny split-layout package tree.
func buildEntry(t *testing.T, cache string) *Kernel {
	t.Helper()
	needDepmod(t)
	tmp, err := os.MkdirTemp(cache, ".debian-7.3.tmp-")
	assert.NilError(t, err)
	src, root := filepath.Join(tmp, "x"), filepath.Join(tmp, "root")
	writeFiles(t, src, map[string][]byte{
		"usr/lib/modules/7.3.4+deb13-amd64/vmlinuz.unsigned":              fakeBzImage("7.3.4+deb13-amd64"),
		"usr/lib/modules/7.3.4+deb13-amd64/kernel/drivers/net/tun.ko.xz":  xzBytes(t, fakeModule),
		"usr/lib/modules/7.3.4+deb13-amd64/kernel/drivers/net/veth.ko.xz": xzBytes(t, fakeModule),
	})
	release, err := normalise(context.Background(), src, root)
	assert.NilError(t, err)
	assert.NilError(t, writeManifest(root, manifest{
		Name: "debian:7.3", Package: "linux-binary-unsigned-7.3.4+deb13-amd64", Version: "7.3.4-1~bpo13+1", Release: release,
	}))
	assert.NilError(t, install(root, filepath.Join(cache, "debian-7.3")))
	assert.NilError(t, os.RemoveAll(tmp))
	k, _, err := verifyEntry(filepath.Join(cache, "debian-7.3"))
	assert.NilError(t, err)
	return k
}

func TestManifestVerify(t *testing.T) {
	cache := t.TempDir()
	k := buildEntry(t, cache)
	root := filepath.Join(cache, "debian-7.3")
	assert.Check(t, is.DeepEqual(k, &Kernel{
		Name:           "debian:7.3",
		Release:        "7.3.4+deb13-amd64",
		Root:           root,
		Vmlinuz:        filepath.Join(root, "boot/vmlinuz-7.3.4+deb13-amd64"),
		ModulesDir:     filepath.Join(root, "lib/modules/7.3.4+deb13-amd64"),
		Package:        "linux-binary-unsigned-7.3.4+deb13-amd64",
		PackageVersion: "7.3.4-1~bpo13+1",
	}))
	_, m, err := verifyEntry(root)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(m.ModuleFiles, 2))
	got, ok := Cached("debian:7.3", Options{CacheDir: cache})
	assert.Check(t, ok)
	assert.Check(t, is.DeepEqual(got, k))
	_, ok = Cached("debian:6.1", Options{CacheDir: cache})
	assert.Check(t, !ok, "Cached found an entry never built")

	_, _, err = verifyEntry(filepath.Join(cache, "debian-6.1"))
	assert.Check(t, is.ErrorContains(err, "no manifest"))
}

// TestCachedEntry: a verified entry is reused, a missing one is nil without
// a note, a damaged one is removed with a note so Resolve fetches it again.
func TestCachedEntry(t *testing.T) {
	cache := t.TempDir()
	k := buildEntry(t, cache)
	var progress bytes.Buffer
	got, m, err := cachedEntry(k.Root, "debian:7.3", &progress)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, k))
	assert.Check(t, is.Equal(m.Version, "7.3.4-1~bpo13+1"))

	got, _, err = cachedEntry(filepath.Join(cache, "debian-6.1"), "debian:6.1", &progress)
	assert.NilError(t, err)
	assert.Check(t, got == nil)
	assert.Check(t, is.Equal(progress.String(), ""))

	rm(t, filepath.Join(k.Root, manifestName))
	got, _, err = cachedEntry(k.Root, "debian:7.3", &progress)
	assert.NilError(t, err)
	assert.Check(t, got == nil)
	assert.Check(t, is.Contains(progress.String(), "cached debian:7.3 is unusable (no manifest (an interrupted fetch?)"))
	assert.Check(t, !exists(k.Root), "the damaged entry was left in place")
}

// TestCorruptEntry damages a verified entry in each way an interrupted or
// tampered cache can be damaged; every one must fail verification (and so
// be fetched again by Resolve).
func TestCorruptEntry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, k *Kernel)
		want   string
	}{
		{"NoManifest", func(t *testing.T, k *Kernel) { rm(t, filepath.Join(k.Root, manifestName)) }, "no manifest"},
		{"GarbageManifest", func(t *testing.T, k *Kernel) {
			write(t, filepath.Join(k.Root, manifestName), "{not json")
		}, "manifest:"},
		{"EmptyManifest", func(t *testing.T, k *Kernel) {
			write(t, filepath.Join(k.Root, manifestName), "{}")
		}, "manifest lacks"},
		{"VmlinuzChanged", func(t *testing.T, k *Kernel) { write(t, k.Vmlinuz, "truncated") }, "has sha256"},
		{"VmlinuzGone", func(t *testing.T, k *Kernel) { rm(t, k.Vmlinuz) }, "no such file"},
		{"ModuleGone", func(t *testing.T, k *Kernel) {
			rm(t, filepath.Join(k.ModulesDir, "kernel/drivers/net/veth.ko.xz"))
		}, "has 1 module files, the manifest says 2"},
		{"NoModulesDep", func(t *testing.T, k *Kernel) {
			rm(t, filepath.Join(k.ModulesDir, "modules.dep"))
		}, "has no modules.dep"},
		{"NoModulesDir", func(t *testing.T, k *Kernel) { rm(t, filepath.Join(k.Root, "lib")) }, "has no modules.dep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			k := buildEntry(t, cache)
			tc.damage(t, k)
			_, _, err := verifyEntry(k.Root)
			assert.ErrorContains(t, err, tc.want)
			_, ok := Cached("debian:7.3", Options{CacheDir: cache})
			assert.Check(t, !ok, "Cached returned a damaged entry")
		})
	}
}

// TestResolveReusesCachedEntry: a verified entry is returned without any
// network or apt state (none is created).
func TestResolveReusesCachedEntry(t *testing.T) {
	cache := t.TempDir()
	k := buildEntry(t, cache)
	var progress bytes.Buffer
	got, err := Resolve(context.Background(), "debian:7.3", Options{CacheDir: cache, Progress: &progress})
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, k))
	assert.Check(t, is.Equal(progress.String(), ""))
	assert.Check(t, !exists(filepath.Join(cache, "apt")), "Resolve of a cached kernel touched apt")
}

func TestInstallAndLeftovers(t *testing.T) {
	cache := t.TempDir()
	final := filepath.Join(cache, "debian-7.3")
	writeFiles(t, cache, map[string][]byte{
		"debian-7.3/old":              []byte("old"),
		"new/fresh":                   []byte("new"),
		".debian-7.3.tmp-123/x":       []byte("killed fetch"),
		".debian-7.3.old-456/entry/x": []byte("killed install"),
		".debian-6.1.tmp-789/x":       []byte("another entry's"),
	})
	assert.NilError(t, install(filepath.Join(cache, "new"), final))
	assert.Check(t, exists(filepath.Join(final, "fresh")))
	assert.Check(t, !exists(filepath.Join(final, "old")))
	removeLeftovers(cache, "debian-7.3")
	entries, err := os.ReadDir(cache)
	assert.NilError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Check(t, is.DeepEqual(names, []string{".debian-6.1.tmp-789", "debian-7.3"}))
}

func rm(t *testing.T, path string) {
	t.Helper()
	assert.NilError(t, os.RemoveAll(path))
}

func write(t *testing.T, path, data string) {
	t.Helper()
	assert.NilError(t, os.WriteFile(path, []byte(data), 0o644))
}
