package kbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// treeFile is one file of a kernel source tree.
type treeFile struct {
	rel  string      // path relative to the tree
	mode fs.FileMode // type and permission bits
	link string      // target, for a symlink
}

// checkTree makes sure dir is a kernel source tree that can be built out
// of tree: it has the top Makefile, Kconfig and arch/x86, and no in-tree
// build output (kbuild refuses O= builds of such a tree).
func checkTree(dir string) error {
	for _, f := range []string{"Makefile", "Kconfig", "arch/x86/Kconfig", "scripts/kconfig/merge_config.sh"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("%s is not a kernel source tree: it has no %s", dir, f)
		}
	}
	for _, f := range []string{".config", "include/config/auto.conf"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil && !isGit(dir) {
			return fmt.Errorf("%s has been built in place (it has %s): run `make mrproper` in it, or give a clean tree", dir, f)
		}
	}
	return nil
}

// isGit reports whether dir is the top of a git work tree.
func isGit(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ".git"))
	return err == nil
}

// listTree lists the files that make up the tree's source: for a git
// checkout, the tracked files and the untracked ones git does not ignore
// (so build output in the checkout is left out); otherwise every file but
// a .git directory.
func listTree(ctx context.Context, dir string) ([]treeFile, error) {
	var rels []string
	if isGit(dir) {
		ls := exec.CommandContext(ctx, "git", "-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
		out, err := ls.Output()
		if err != nil {
			return nil, fmt.Errorf("listing the files of %s: git ls-files: %w", dir, err)
		}
		for r := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			if r != "" {
				rels = append(rels, r)
			}
		}
	} else {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(dir, path)
				rels = append(rels, rel)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing the files of %s: %w", dir, err)
		}
	}
	slices.Sort(rels)
	rels = slices.Compact(rels)
	files := make([]treeFile, 0, len(rels))
	for _, rel := range rels {
		st, err := os.Lstat(filepath.Join(dir, rel))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, still in git's index
		}
		if err != nil {
			return nil, err
		}
		f := treeFile{rel: rel, mode: st.Mode()}
		if st.Mode()&fs.ModeSymlink != 0 {
			if f.link, err = os.Readlink(filepath.Join(dir, rel)); err != nil {
				return nil, err
			}
		} else if !st.Mode().IsRegular() {
			continue
		}
		files = append(files, f)
	}
	return files, nil
}

// syncTree makes dst hold exactly the files of src, writing only the files
// whose content differs (so make rebuilds only what changed: a rewritten
// file is newer than its objects, an untouched one keeps its time), and
// removing what src does not have. It returns a hash of the tree's
// content: paths, modes and bytes, the same for the same tree wherever it
// sits.
func syncTree(ctx context.Context, src, dst string, files []treeFile) (string, int, error) {
	type result struct {
		sum     [sha256.Size]byte
		written bool
		err     error
	}
	res := make([]result, len(files))
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(2, runtime.NumCPU()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				res[i].sum, res[i].written, res[i].err = copyIfChanged(src, dst, files[i])
			}
		}()
	}
	for i := range files {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return "", 0, err
	}

	h := sha256.New()
	keep := make(map[string]bool, len(files))
	written := 0
	for i, f := range files {
		if res[i].err != nil {
			return "", 0, res[i].err
		}
		if res[i].written {
			written++
		}
		keep[f.rel] = true
		fmt.Fprintf(h, "%s\x00%o\x00%x\n", f.rel, f.mode&(fs.ModeSymlink|0o111), res[i].sum)
	}
	err := filepath.WalkDir(dst, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dst, path)
		if !keep[rel] {
			written++
			return os.Remove(path)
		}
		return nil
	})
	if err != nil {
		return "", 0, fmt.Errorf("removing files the tree no longer has from %s: %w", dst, err)
	}
	return hex.EncodeToString(h.Sum(nil)), written, nil
}

// copyIfChanged copies one file when dst differs and returns the hash of its
// content (a symlink's: its target).
func copyIfChanged(srcDir, dstDir string, f treeFile) (sum [sha256.Size]byte, written bool, err error) {
	src, dst := filepath.Join(srcDir, f.rel), filepath.Join(dstDir, f.rel)
	if f.link != "" {
		sum = sha256.Sum256([]byte(f.link))
		if cur, err := os.Readlink(dst); err == nil && cur == f.link {
			return sum, false, nil
		}
		os.Remove(dst)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return sum, false, err
		}
		return sum, true, os.Symlink(f.link, dst)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return sum, false, err
	}
	sum = sha256.Sum256(data)
	st, statErr := os.Lstat(dst)
	sameShape := statErr == nil && st.Mode().IsRegular() &&
		st.Mode()&0o111 == f.mode&0o111 && st.Size() == int64(len(data))
	if sameShape {
		if cur, err := os.ReadFile(dst); err == nil && bytes.Equal(cur, data) {
			return sum, false, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return sum, false, err
	}
	os.Remove(dst) // a symlink or a file of another mode before
	if err := os.WriteFile(dst, data, f.mode.Perm()); err != nil {
		return sum, false, fmt.Errorf("copying the tree: %w", err)
	}
	return sum, true, os.Chmod(dst, f.mode.Perm())
}
