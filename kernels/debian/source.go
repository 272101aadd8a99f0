package debian

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/xmitcheck/xmitcheck/kernels/internal/cachefile"
)

// Source fetches, through a (the index of s's suite), Debian's
// linux-source package of s (its newest version) and unpacks the tree into
// dir/linux-source-SERIES, which must not exist yet (dir is made when it
// is new). It returns the tree: what `kernels build --tree` takes.
func (a Index) Source(ctx context.Context, s Series, dir string, progress io.Writer) (string, error) {
	tree := filepath.Join(dir, "linux-source-"+s.Upstream)
	if _, err := os.Lstat(tree); err == nil {
		return "", fmt.Errorf("%s exists: remove it, or build it as it is (xmitcheck kernels build --tree %[1]s)", tree)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("making %s for the source: %w", dir, err)
	}
	_, err := a.fetchSource(ctx, s, dir, nil, progress, func(unpacked string) error {
		return os.Rename(unpacked, tree)
	})
	if err != nil {
		return "", err
	}
	return tree, nil
}

// SourceFiles fetches Debian's linux-source package of s, as Source does,
// and unpacks only members (paths in the tree, files or directories) into
// dir, at their paths in the tree. It returns the package's version.
func (a Index) SourceFiles(ctx context.Context, s Series, members []string, dir string,
	progress io.Writer) (string, error) {
	return a.fetchSource(ctx, s, dir, members, progress, func(unpacked string) error {
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
func (a Index) fetchSource(ctx context.Context, s Series, dir string, members []string, progress io.Writer,
	keep func(unpacked string) error) (string, error) {
	unlock, err := a.Lock(ctx, progress)
	if err != nil {
		return "", err
	}
	defer unlock()
	if !a.fresh() {
		cachefile.Note(progress, "updating the package index of %s…", s.Suite)
		if err := a.Update(ctx); err != nil {
			return "", err
		}
	}
	source := "linux-source-" + s.Upstream
	candidates, err := a.candidates(ctx, []string{source})
	if err != nil {
		return "", err
	}
	if candidates[source] == "" {
		return "", fmt.Errorf("%s has no %s package", s.Suite, source)
	}
	debs, err := a.files(ctx, []Package{{Name: source, Version: candidates[source]}})
	if err != nil {
		return "", err
	}
	src := debs[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, ".linux-source-"+s.Upstream+".tmp-")
	if err != nil {
		return "", fmt.Errorf("unpacking into %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	cachefile.Note(progress, "fetching %s %s (%d MB)…", src.Name, src.Version, src.Size>>20)
	if err := a.download(ctx, tmp, []Package{src}); err != nil {
		return "", err
	}
	deb, err := checkDeb(tmp, src)
	if err != nil {
		return "", err
	}
	if err := extractDeb(ctx, deb, filepath.Join(tmp, "deb")); err != nil {
		return "", err
	}
	top := "linux-source-" + s.Upstream
	tarball := filepath.Join(tmp, "deb", "usr", "src", top+".tar.xz")
	cachefile.Note(progress, "unpacking %s…", filepath.Base(tarball))
	args := []string{"-xf", tarball, "-C", tmp}
	for _, m := range members {
		args = append(args, top+"/"+m)
	}
	if out, err := exec.CommandContext(ctx, "tar", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("tar -xf %s: %v: %s", filepath.Base(tarball), err, strings.TrimSpace(string(out)))
	}
	return src.Version, keep(filepath.Join(tmp, top))
}
