package kernels

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Source fetches Debian's linux-source package of a catalog kernel (the
// same series and suite, its newest version) and unpacks the tree into
// dir/linux-source-SERIES, which must not exist yet (dir is made when it
// is new). It returns the tree: what `kernels build --tree` takes.
func Source(ctx context.Context, name, dir string, opts Options) (string, error) {
	s, ok := lookupSeries(name)
	if !ok {
		return "", fmt.Errorf("%w %q: the sources come with the catalog's Debian kernels: %s",
			ErrUnknownKernel, name, validNames())
	}
	tree := filepath.Join(dir, "linux-source-"+s.upstream)
	if _, err := os.Lstat(tree); err == nil {
		return "", fmt.Errorf("%s exists: remove it, or build it as it is (xmitcheck kernels build --tree %[1]s)", tree)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("making %s for the source: %w", dir, err)
	}
	_, err := fetchSource(ctx, s, dir, nil, opts, func(unpacked string) error {
		return os.Rename(unpacked, tree)
	})
	if err != nil {
		return "", err
	}
	return tree, nil
}

// SourceFiles fetches Debian's linux-source package of a catalog kernel,
// as Source does, and unpacks only members (paths in the tree, files or
// directories) into dir, at their paths in the tree. It returns the
// package's version.
func SourceFiles(ctx context.Context, name string, members []string, dir string, opts Options) (string, error) {
	s, ok := lookupSeries(name)
	if !ok {
		return "", fmt.Errorf("%w %q: the sources come with the catalog's Debian kernels: %s",
			ErrUnknownKernel, name, validNames())
	}
	return fetchSource(ctx, s, dir, members, opts, func(unpacked string) error {
		for _, m := range members {
			to := filepath.Join(dir, m)
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			if err := os.Rename(filepath.Join(unpacked, m), to); err != nil {
				return err
			}
		}
		return nil
	})
}

// fetchSource downloads s's linux-source package into a temporary
// directory in dir, unpacks its tarball there (only members of the tree,
// when given) and hands keep the unpacked tree before the rest is
// removed. It returns the package's version.
func fetchSource(ctx context.Context, s series, dir string, members []string, opts Options,
	keep func(unpacked string) error) (string, error) {
	cache, err := opts.cacheDir()
	if err != nil {
		return "", err
	}
	a := aptState{dir: filepath.Join(cache, "apt", s.Suite), suite: s.Suite}
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lock(ctx, a.dir+".lock", "the "+s.Suite+" package index", opts.Progress)
	if err != nil {
		return "", err
	}
	defer unlock()
	if !a.fresh() {
		note(opts.Progress, "updating the package index of %s…", s.Suite)
		if err := updateIndex(ctx, a); err != nil {
			return "", err
		}
	}
	source := "linux-source-" + s.upstream
	candidates, err := a.candidates(ctx, []string{source})
	if err != nil {
		return "", err
	}
	if candidates[source] == "" {
		return "", fmt.Errorf("%s has no %s package", s.Suite, source)
	}
	debs, err := a.files(ctx, []pkg{{Name: source, Version: candidates[source]}})
	if err != nil {
		return "", err
	}
	src := debs[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, ".linux-source-"+s.upstream+".tmp-")
	if err != nil {
		return "", fmt.Errorf("unpacking into %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	note(opts.Progress, "fetching %s %s (%d MB)…", src.Name, src.Version, src.Size>>20)
	if err := a.download(ctx, tmp, []pkg{src}); err != nil {
		return "", err
	}
	deb, err := checkDeb(tmp, src)
	if err != nil {
		return "", err
	}
	if err := extractDeb(ctx, deb, filepath.Join(tmp, "deb")); err != nil {
		return "", err
	}
	top := "linux-source-" + s.upstream
	tarball := filepath.Join(tmp, "deb", "usr", "src", top+".tar.xz")
	note(opts.Progress, "unpacking %s…", filepath.Base(tarball))
	args := []string{"-xf", tarball, "-C", tmp}
	for _, m := range members {
		args = append(args, top+"/"+m)
	}
	if out, err := exec.CommandContext(ctx, "tar", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("tar -xf %s: %v: %s", filepath.Base(tarball), err, strings.TrimSpace(string(out)))
	}
	return src.Version, keep(filepath.Join(tmp, top))
}
