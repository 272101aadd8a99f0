package kernels

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/kernels/debian"
)

func TestCatalog(t *testing.T) {
	var names []string
	for _, e := range Catalog() {
		names = append(names, e.Name)
		assert.Check(t, e.Description != "", "%s has no description", e.Name)
	}
	assert.Check(t, is.DeepEqual(names, []string{
		"debian:5.10", "debian:6.1", "debian:6.12", "debian:6.12-rt", "debian:6.12-cloud",
		"debian:7.2", "debian:7.2-rt", "debian:7.2-cloud", "debian:7.3", "debian:7.3-rt", "debian:7.3-cloud", "host", "PATH",
	}))
	_, ok := debian.Lookup(DefaultKernel)
	assert.Check(t, ok, "DefaultKernel %q is not in the catalog", DefaultKernel)
}

func TestResolveUnknown(t *testing.T) {
	t.Chdir(t.TempDir()) // "debian" is a path where a directory of that name is (this package's)
	for _, name := range []string{"debian:9.9", "debian", "7.3", "ubuntu:24.04", ""} {
		_, err := Resolve(context.Background(), name, Options{CacheDir: t.TempDir()})
		assert.Check(t, errors.Is(err, ErrUnknownKernel), "%q: %v", name, err)
	}
	_, err := Resolve(context.Background(), "debian:9.9", Options{CacheDir: t.TempDir()})
	assert.Error(t, err, `unknown kernel "debian:9.9": use one of `+
		`debian:5.10, debian:6.1, debian:6.12, debian:6.12-rt, debian:6.12-cloud, `+
		`debian:7.2, debian:7.2-rt, debian:7.2-cloud, debian:7.3, debian:7.3-rt, debian:7.3-cloud, host, `+
		`or a path to a bzImage or kernel tree`)
}

// TestCheckVng: virtme-ng refuses the cloud flavours (no 9p) by name,
// before anything is fetched; every other kernel is left to vng.
func TestCheckVng(t *testing.T) {
	for _, name := range []string{"debian:6.12-cloud", "debian:7.2-cloud", "debian:7.3-cloud"} {
		want := name + " cannot boot under virtme-ng: Debian's cloud kernels have no 9p; use --backend native"
		assert.Check(t, is.Error(CheckVng(name), want))
	}
	for _, name := range []string{"debian:7.3", "debian:7.3-rt", "debian:6.12-rt", "host", "./bzImage", "build:no003"} {
		assert.Check(t, CheckVng(name), name)
	}
}

func TestResolveMissingPath(t *testing.T) {
	for _, name := range []string{"./bzImage-nope", "/nonexistent/arch/x86/boot/bzImage", "build/linux"} {
		_, err := Resolve(context.Background(), name, Options{CacheDir: t.TempDir()})
		assert.Check(t, !errors.Is(err, ErrUnknownKernel), "%q: %v", name, err)
		want := "kernel path \"" + name + "\" does not exist: give a bzImage/vmlinuz file, a built kernel tree"
		assert.Check(t, is.ErrorContains(err, want), name)
	}
}

func TestResolveHost(t *testing.T) {
	var u unix.Utsname
	assert.NilError(t, unix.Uname(&u))
	cache := t.TempDir()
	k, err := Resolve(context.Background(), "host", Options{CacheDir: cache})
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(k, &Kernel{Name: "host", Host: true, Release: unix.ByteSliceToString(u.Release[:])}))
	assert.Check(t, is.Equal(k.Label(), "host ("+k.Release+")"))
	c, ok := Cached("host", Options{CacheDir: cache})
	assert.Check(t, ok)
	assert.Check(t, is.DeepEqual(c, k))
	entries, err := os.ReadDir(cache)
	assert.NilError(t, err)
	assert.Check(t, is.Len(entries, 0), "host wrote into the cache")
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	d, err := DefaultCacheDir()
	assert.NilError(t, err)
	assert.Check(t, is.Equal(d, "/xdg/xmitcheck/kernels"))
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/home/u")
	d, err = DefaultCacheDir()
	assert.NilError(t, err)
	assert.Check(t, is.Equal(d, filepath.Join("/home/u", ".cache", "xmitcheck", "kernels")))
}

// TestNameOfRelease: a release names its catalog kernel by the series'
// ABI and flavour; another flavour's or a self-built release names none.
func TestNameOfRelease(t *testing.T) {
	for release, want := range map[string]string{
		"7.3.4+deb13-amd64":       "debian:7.3",
		"7.3.4+deb13-rt-amd64":    "debian:7.3-rt",
		"7.3.4+deb13-cloud-amd64": "debian:7.3-cloud",
		"7.2.13+deb14-amd64":      "debian:7.2",
		"6.12.117+deb13-amd64":    "debian:6.12",
		"6.1.0-50-amd64":          "debian:6.1",
		"5.10.0-32-amd64":         "debian:5.10",
		"7.3.4":                   "",
		"6.18.44-fc-v1272":        "",
		"7.3.4+deb13-arm64":       "",
		"6.12.117+deb13-amd64x":   "",
	} {
		got, ok := NameOfRelease(release)
		assert.Check(t, is.Equal(got, want), release)
		assert.Check(t, is.Equal(ok, want != ""), release)
	}
}
