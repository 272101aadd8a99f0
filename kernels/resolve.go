package kernels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
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
	if s, ok := lookupSeries(name); ok {
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
	if _, ok := lookupSeries(name); !ok {
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

// resolveDebian returns the cached entry of a catalog kernel, or fetches it.
func resolveDebian(ctx context.Context, s series, opts Options) (*Kernel, error) {
	dir, err := opts.cacheDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the kernel cache: %w", err)
	}
	key := entryKey(s.Name)
	unlock, err := lock(ctx, filepath.Join(dir, key+".lock"), s.Name, opts.Progress)
	if err != nil {
		return nil, err
	}
	defer unlock()
	removeLeftovers(dir, key)

	final := filepath.Join(dir, key)
	cached, m, err := cachedEntry(final, s.Name, opts.Progress)
	if err != nil {
		return nil, err
	}
	if cached != nil && !opts.Refresh {
		return cached, nil
	}

	a := aptState{dir: filepath.Join(dir, "apt", s.Suite), suite: s.Suite}
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return nil, err
	}
	unlockApt, err := lock(ctx, a.dir+".lock", "the "+s.Suite+" package index", opts.Progress)
	if err != nil {
		return nil, err
	}
	defer unlockApt()
	c, err := pickFromIndex(ctx, s, a, opts.Progress)
	if err != nil {
		return nil, err
	}
	if cached != nil && m.Version == c.Image.Version {
		return cached, nil
	}
	return fetch(ctx, s, c, a, dir, opts.Progress)
}

// cachedEntry returns the verified entry at final, or nil when there is
// none. An entry that exists but does not verify is removed, with a note, so
// that it is fetched again.
func cachedEntry(final, name string, progress io.Writer) (*Kernel, *manifest, error) {
	if _, err := os.Lstat(final); err != nil {
		return nil, nil, nil
	}
	k, m, err := verifyEntry(final)
	if err == nil {
		return k, m, nil
	}
	note(progress, "cached %s is unusable (%v): fetching it again", name, err)
	return nil, nil, removeEntry(final)
}

// pickFromIndex updates the suite's index when it is older than an hour and
// asks apt for the newest package of the series in it. A failed update
// falls back to the older index when apt finds the series there.
func pickFromIndex(ctx context.Context, s series, a aptState, progress io.Writer) (choice, error) {
	if !a.fresh() {
		note(progress, "updating the package index of %s…", s.Suite)
		if err := updateIndex(ctx, a); err != nil {
			c, perr := s.pick(ctx, a)
			if perr != nil {
				return choice{}, err
			}
			note(progress, "%v: using the older index", err)
			return c, nil
		}
	}
	return s.pick(ctx, a)
}

func updateIndex(ctx context.Context, a aptState) error {
	m, err := readMirror(debianSources)
	if err != nil {
		return err
	}
	return a.update(ctx, m)
}

// fetch downloads, checks, extracts and normalises the chosen packages into
// a temporary directory inside the cache, writes the manifest last and
// renames the result into place: nothing half-written is ever an entry.
func fetch(ctx context.Context, s series, c choice, a aptState, dir string, progress io.Writer) (*Kernel, error) {
	start := time.Now()
	key := entryKey(s.Name)
	tmp, err := os.MkdirTemp(dir, "."+key+".tmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	var size int64
	var names []string
	for _, p := range c.debs() {
		size += p.Size
		names = append(names, p.Name+"="+p.Version)
	}
	note(progress, "fetching %s (%s %s, %d MB)…", s.Name, c.Image.Name, c.Image.Version, size>>20)
	debs := filepath.Join(tmp, "debs")
	if err := os.Mkdir(debs, 0o755); err != nil {
		return nil, err
	}
	if err := a.download(ctx, debs, c.debs()); err != nil {
		return nil, fmt.Errorf("fetching %s: %w", s.Name, err)
	}
	downloaded := time.Now()
	extracted := filepath.Join(tmp, "x")
	for _, p := range c.debs() {
		path, err := checkDeb(debs, p)
		if err != nil {
			return nil, err
		}
		if err := extractDeb(ctx, path, extracted); err != nil {
			return nil, err
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	unpacked := time.Now()
	root := filepath.Join(tmp, "root")
	release, err := normalise(ctx, extracted, root)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	if release != c.Release {
		return nil, fmt.Errorf("%s: %s holds release %s, its name says %s", s.Name, c.Image.Name, release, c.Release)
	}
	err = writeManifest(root, manifest{
		Name: s.Name, Package: c.Image.Name, Version: c.Image.Version, Packages: names, Release: release,
	})
	if err != nil {
		return nil, err
	}
	final := filepath.Join(dir, key)
	if err := install(root, final); err != nil {
		return nil, err
	}
	k, _, err := verifyEntry(final)
	if err != nil {
		return nil, fmt.Errorf("%s: the entry just built does not verify: %w", s.Name, err)
	}
	note(progress, "%s ready in %.1fs (download %.1fs, check and unpack %.1fs, depmod %.1fs): %s", s.Name,
		time.Since(start).Seconds(), downloaded.Sub(start).Seconds(),
		unpacked.Sub(downloaded).Seconds(), time.Since(unpacked).Seconds(), k.Vmlinuz)
	return k, nil
}

// checkDeb finds the downloaded file of p in dir and checks its size and
// SHA256 against the index.
func checkDeb(dir string, p pkg) (string, error) {
	matches, _ := filepath.Glob(filepath.Join(dir, p.Name+"_*.deb"))
	if len(matches) != 1 {
		return "", fmt.Errorf("apt-get download left %d files for %s in %s, want 1", len(matches), p.Name, dir)
	}
	path := matches[0]
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.Size() != p.Size {
		return "", fmt.Errorf("%s is %d bytes, the index says %d: the download is damaged, try again",
			path, st.Size(), p.Size)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return "", err
	}
	if sum != p.SHA256 {
		return "", fmt.Errorf("%s has sha256 %s, the index says %s: the download is damaged, try again", path, sum, p.SHA256)
	}
	return path, nil
}

func extractDeb(ctx context.Context, deb, dir string) error {
	out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, dir).CombinedOutput()
	var notFound *exec.Error
	switch {
	case errors.As(err, &notFound):
		return fmt.Errorf("%w: install dpkg (xmitcheck unpacks Debian kernels with dpkg-deb)", err)
	case err != nil:
		return fmt.Errorf("dpkg-deb -x %s: %v: %s", filepath.Base(deb), err, strings.TrimSpace(string(out)))
	}
	return nil
}
