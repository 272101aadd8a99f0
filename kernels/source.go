package kernels

import (
	"context"
	"fmt"

	"github.com/xmitcheck/xmitcheck/kernels/debian"
)

// Source fetches Debian's linux-source package of a catalog kernel (the
// same series and suite, its newest version) and unpacks the tree into
// dir/linux-source-SERIES, which must not exist yet (dir is made when it
// is new). It returns the tree: what `kernels build --tree` takes.
func Source(ctx context.Context, name, dir string, opts Options) (string, error) {
	s, a, err := sourceIndex(name, opts)
	if err != nil {
		return "", err
	}
	return a.Source(ctx, s, dir, opts.Progress)
}

// SourceFiles fetches Debian's linux-source package of a catalog kernel,
// as Source does, and unpacks only members (paths in the tree, files or
// directories) into dir, at their paths in the tree. It returns the
// package's version.
func SourceFiles(ctx context.Context, name string, members []string, dir string, opts Options) (string, error) {
	s, a, err := sourceIndex(name, opts)
	if err != nil {
		return "", err
	}
	return a.SourceFiles(ctx, s, members, dir, opts.Progress)
}

// sourceIndex is the catalog kernel name and the index of its suite.
func sourceIndex(name string, opts Options) (debian.Series, debian.Index, error) {
	s, ok := debian.Lookup(name)
	if !ok {
		return debian.Series{}, debian.Index{}, fmt.Errorf("%w %q: the sources come with the catalog's Debian kernels: %s",
			ErrUnknownKernel, name, validNames())
	}
	cache, err := opts.cacheDir()
	if err != nil {
		return debian.Series{}, debian.Index{}, err
	}
	return s, debian.NewIndex(cache, s.Suite), nil
}
