package kernels

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/xmitcheck/xmitcheck/kernels/debian"
)

// Options tune Resolve and Cached.
type Options struct {
	// CacheDir holds fetched and normalised kernels; empty means
	// DefaultCacheDir().
	CacheDir string
	// Modules is, for a local kernel given as a bzImage, its modules
	// directory (lib/modules/RELEASE); empty means every option the suites
	// need is built in. For a kernel tree it replaces the tree's own modules.
	Modules string
	// Progress receives one line per long step (index update, download,
	// waiting for a lock); nil is quiet.
	Progress io.Writer
	// Refresh makes Resolve look for a newer package of a cached Debian
	// kernel (`xmitcheck kernels fetch`). The suite's index is updated at
	// most once an hour either way.
	Refresh bool
}

// Resolve turns a kernel name into a ready-to-boot Kernel: a catalog name
// (fetched from Debian when it is not cached, or when the cached entry is
// corrupt), "host", or a path to a bzImage or a built kernel tree. A name
// that is none of these wraps ErrUnknownKernel.
func Resolve(ctx context.Context, name string, opts Options) (*Kernel, error) {
	if name == "host" {
		return hostKernel()
	}
	if s, ok := debian.Lookup(name); ok {
		return resolveDebian(ctx, s, opts)
	}
	if build, ok := strings.CutPrefix(name, "build:"); ok {
		b, err := LookupBuild(build, opts)
		if err != nil {
			return nil, err
		}
		k, err := resolveLocal(ctx, b.Image(), opts)
		if err != nil {
			return nil, err
		}
		k.Name = name
		return k, nil
	}
	if isPath(name) {
		return resolveLocal(ctx, name, opts)
	}
	return nil, fmt.Errorf("%w %q: use one of %s, or a path to a bzImage or kernel tree",
		ErrUnknownKernel, name, validNames())
}

// Cached returns a catalog kernel when a verified entry of it is in the
// cache, and the host kernel for "host". It never fetches nor touches the
// network; for paths it returns false (Resolve handles them without the
// network anyway).
func Cached(name string, opts Options) (*Kernel, bool) {
	if name == "host" {
		k, err := hostKernel()
		return k, err == nil
	}
	if _, ok := debian.Lookup(name); !ok {
		return nil, false
	}
	dir, err := opts.cacheDir()
	if err != nil {
		return nil, false
	}
	k, _, err := verifyEntry(filepath.Join(dir, entryKey(name)))
	return k, err == nil
}

// isPath says whether a name that is not in the catalog means a file: it
// has a path separator or names something that exists.
func isPath(name string) bool {
	if strings.ContainsRune(name, os.PathSeparator) || strings.HasPrefix(name, ".") {
		return true
	}
	_, err := os.Stat(name)
	return err == nil
}
