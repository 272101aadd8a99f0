package kernels

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/kernels/debian"
)

// TestFetchDebian really fetches debian:7.3 (split packaging) and debian:6.1
// (old layout) from the machine's Debian mirror into a fresh cache, checks
// what it got, then the reuse, corrupt-entry and local-kernel paths on the
// result. It logs how long each fetch took and the package versions.
func TestFetchDebian(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: fetching Debian kernels downloads about 200 MB")
	}
	for _, tool := range []string{"apt-get", "dpkg-deb", "depmod"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found (%v): fetching Debian kernels needs apt, dpkg and kmod", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cache := t.TempDir()

	// Probe the mirror with the update Resolve would run anyway. The probe
	// uses its own state, so Resolve starts from an empty cache.
	if err := debian.NewIndex(t.TempDir(), "trixie-backports").Update(ctx); err != nil {
		t.Skipf("the Debian mirror can't be read: %v", err)
	}

	for _, tc := range []struct {
		name, prefix string
		moduleExt    string
	}{
		{"debian:7.3", "linux-binary-unsigned-7.3.", ".ko.xz"},
		{"debian:6.1", "linux-image-6.1.0-", ".ko"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var progress bytes.Buffer
			start := time.Now()
			k, err := Resolve(ctx, tc.name, Options{CacheDir: cache, Progress: &progress})
			took := time.Since(start)
			assert.NilError(t, err, "progress:\n%s", progress.String())
			t.Logf("%s: %s %s (release %s) fetched in %.1fs\n%s",
				tc.name, k.Package, k.PackageVersion, k.Release, took.Seconds(), progress.String())

			assert.Check(t, strings.HasPrefix(k.Package, tc.prefix), "package %q", k.Package)
			assert.Check(t, k.PackageVersion != "", "no package version")
			assert.Check(t, is.Equal(k.Label(), tc.name+" ("+k.PackageVersion+")"))
			assert.Check(t, is.Equal(k.Vmlinuz, filepath.Join(cache, entryKey(tc.name), "boot", "vmlinuz-"+k.Release)))
			assert.Check(t, is.Equal(k.ModulesDir, filepath.Join(cache, entryKey(tc.name), "lib", "modules", k.Release)))
			assertBzImage(t, k.Vmlinuz)
			rel, err := bzImageRelease(k.Vmlinuz)
			assert.Check(t, err)
			assert.Check(t, is.Equal(rel, k.Release))
			assert.Check(t, exists(filepath.Join(k.ModulesDir, "modules.dep")), "no modules.dep")

			mods, missing, err := ModuleClosure(k.ModulesDir, GuestModules)
			assert.NilError(t, err)
			assert.Check(t, is.Len(missing, 0), "Debian kernels have every guest module")
			pos := map[string]int{}
			for i, m := range mods {
				pos[m.Name] = i
			}
			for _, want := range []string{"tun", "tap", "vhost", "vhost_net", "veth", "sch_netem"} {
				_, ok := pos[want]
				assert.Check(t, ok, "%s not in the closure %v", want, mods)
			}
			assert.Check(t, pos["tun"] < pos["vhost_net"] && pos["tap"] < pos["vhost_net"] && pos["vhost"] < pos["vhost_net"],
				"vhost_net before its dependencies: %v", mods)
			tun := mods[pos["tun"]]
			assert.Check(t, strings.HasSuffix(tun.Path, "/tun"+tc.moduleExt), "tun at %s", tun.Path)
			elf, err := ReadModule(tun.Path)
			assert.NilError(t, err)
			assert.Check(t, bytes.HasPrefix(elf, []byte("\x7fELF")))
			t.Logf("%s: guest closure %d modules (%s)", tc.name, len(mods), moduleNames(mods))

			// Reuse: no network, same entry.
			again, ok := Cached(tc.name, Options{CacheDir: cache})
			assert.Assert(t, ok, "Cached after Resolve")
			assert.Check(t, is.DeepEqual(again, k))
		})
	}

	t.Run("CorruptEntryIsFetchedAgain", func(t *testing.T) {
		k, ok := Cached("debian:6.1", Options{CacheDir: cache})
		assert.Assert(t, ok)
		f, err := os.OpenFile(k.Vmlinuz, os.O_WRONLY|os.O_APPEND, 0)
		assert.NilError(t, err)
		_, err = f.Write([]byte{0})
		assert.NilError(t, err)
		assert.NilError(t, f.Close())
		_, ok = Cached("debian:6.1", Options{CacheDir: cache})
		assert.Check(t, !ok, "Cached accepted a vmlinuz whose hash changed")

		var progress bytes.Buffer
		start := time.Now()
		k2, err := Resolve(ctx, "debian:6.1", Options{CacheDir: cache, Progress: &progress})
		assert.NilError(t, err, "progress:\n%s", progress.String())
		t.Logf("re-fetch took %.1fs:\n%s", time.Since(start).Seconds(), progress.String())
		assert.Check(t, is.Contains(progress.String(), "cached debian:6.1 is unusable"))
		assert.Check(t, is.Contains(progress.String(), "sha256"))
		assert.Check(t, is.DeepEqual(k2, k))
		_, ok = Cached("debian:6.1", Options{CacheDir: cache})
		assert.Check(t, ok)
	})

	t.Run("LocalVmlinuzWithModules", func(t *testing.T) {
		deb, ok := Cached("debian:7.3", Options{CacheDir: cache})
		assert.Assert(t, ok)
		k, err := Resolve(ctx, deb.Vmlinuz, Options{CacheDir: cache, Modules: deb.ModulesDir})
		assert.NilError(t, err)
		assert.Check(t, is.Equal(k.Release, deb.Release))
		assert.Check(t, is.Equal(k.PackageVersion, ""))
		assert.Check(t, is.Equal(k.Label(), deb.Vmlinuz+" ("+deb.Release+")"))
		assertBzImage(t, k.Vmlinuz)
		mods, missing, err := ModuleClosure(k.ModulesDir, GuestModules)
		assert.NilError(t, err)
		assert.Check(t, is.Len(missing, 0))
		assert.Check(t, len(mods) > 0)
	})
}

func assertBzImage(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	assert.NilError(t, err)
	defer f.Close()
	magic := make([]byte, 4)
	_, err = f.ReadAt(magic, 0x202)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(magic), "HdrS"), "%s is not a bzImage", path)
}

func moduleNames(mods []Module) string {
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
	}
	return strings.Join(names, " ")
}
