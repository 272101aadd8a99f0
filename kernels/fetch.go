package kernels

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/xmitcheck/xmitcheck/kernels/debian"
	"github.com/xmitcheck/xmitcheck/kernels/internal/cachefile"
)

// resolveDebian returns the cached entry of a catalog kernel, or fetches it.
func resolveDebian(ctx context.Context, s debian.Series, opts Options) (*Kernel, error) {
	dir, err := opts.cacheDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the kernel cache: %w", err)
	}
	key := entryKey(s.Name)
	unlock, err := cachefile.Lock(ctx, filepath.Join(dir, key+".lock"), s.Name, opts.Progress)
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

	a := debian.NewIndex(dir, s.Suite)
	unlockApt, err := a.Lock(ctx, opts.Progress)
	if err != nil {
		return nil, err
	}
	defer unlockApt()
	c, err := a.Pick(ctx, s, opts.Progress)
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
	cachefile.Note(progress, "cached %s is unusable (%v): fetching it again", name, err)
	return nil, nil, removeEntry(final)
}

// fetch downloads, checks, extracts and normalises the chosen packages into
// a temporary directory inside the cache, writes the manifest last and
// renames the result into place: nothing half-written is ever an entry.
func fetch(ctx context.Context, s debian.Series, c debian.Choice, a debian.Index, dir string,
	progress io.Writer) (*Kernel, error) {
	start := time.Now()
	key := entryKey(s.Name)
	tmp, err := os.MkdirTemp(dir, "."+key+".tmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	var size int64
	var names []string
	for _, p := range c.Debs() {
		size += p.Size
		names = append(names, p.Name+"="+p.Version)
	}
	cachefile.Note(progress, "fetching %s (%s %s, %d MB)…", s.Name, c.Image.Name, c.Image.Version, size>>20)
	debs := filepath.Join(tmp, "debs")
	if err := os.Mkdir(debs, 0o755); err != nil {
		return nil, err
	}
	if err := a.Download(ctx, debs, c); err != nil {
		return nil, fmt.Errorf("fetching %s: %w", s.Name, err)
	}
	downloaded := time.Now()
	extracted := filepath.Join(tmp, "x")
	if err := debian.Unpack(ctx, debs, c, extracted); err != nil {
		return nil, err
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
	cachefile.Note(progress, "%s ready in %.1fs (download %.1fs, check and unpack %.1fs, depmod %.1fs): %s", s.Name,
		time.Since(start).Seconds(), downloaded.Sub(start).Seconds(),
		unpacked.Sub(downloaded).Seconds(), time.Since(unpacked).Seconds(), k.Vmlinuz)
	return k, nil
}
