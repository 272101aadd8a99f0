package runner

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	tree "github.com/xmitcheck/xmitcheck"
	"github.com/xmitcheck/xmitcheck/kernels"
)

// Module is xmitcheck's module path.
const Module = "github.com/xmitcheck/xmitcheck"

// Source is where go compiles the suites: a checkout, or the module
// source embedded in this binary (tree.Source), extracted.
type Source struct {
	// Dir is where go runs: package patterns such as ./suites/tun are
	// relative to it.
	Dir string
	// Env is added to go's environment.
	Env []string
	// Rev says which source it is, for every result: "embedded sha256:…"
	// or "checkout DIR at GIT-DESCRIBE".
	Rev string
}

// FindSuites picks the suites' source: the checkout -C names, else the
// xmitcheck checkout the current directory is in (go runs there, as it
// always did), else the source embedded in this binary. Each needs go.
func FindSuites(ctx context.Context, c string) (Source, error) {
	if err := CheckSuites(c); err != nil {
		return Source{}, err
	}
	if c != "" {
		root, _, _ := moduleRoot(c)
		dir, err := filepath.Abs(c)
		if err != nil {
			return Source{}, err
		}
		return Source{Dir: dir, Rev: "checkout " + root + " at " + gitDescribe(ctx, root)}, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return Source{}, err
	}
	if root, path, ok := moduleRoot(wd); ok && path == Module {
		return Source{Dir: wd, Rev: "checkout " + root + " at " + gitDescribe(ctx, root)}, nil
	}
	return embeddedSuites()
}

// CheckSuites says, before anything is fetched or built, what would keep
// the suites from compiling: no go, or a -C that is no module.
func CheckSuites(c string) error {
	if _, err := exec.LookPath("go"); err != nil {
		return errors.New("go not found: xmitcheck compiles the suites with the Go toolchain " +
			"(go 1.26 or later): install it (https://go.dev/dl, or Debian's golang-go) and put it in PATH")
	}
	if c == "" {
		return nil
	}
	if _, _, ok := moduleRoot(c); !ok {
		return Usagef("-C %s: no go.mod there or above: give an xmitcheck checkout", c)
	}
	return nil
}

// embeddedSuites is the source embedded in this binary, extracted into the
// cache. A go.work above the cache must not pull other modules in.
func embeddedSuites() (Source, error) {
	root, err := suitesCacheDir()
	if err != nil {
		return Source{}, err
	}
	note := func(s string) { fmt.Fprintln(Progress(), "xmitcheck:", s) }
	dir, err := extract(tree.Source, root, embeddedKey(), note)
	if err != nil {
		return Source{}, fmt.Errorf("extracting the suites' source into %s: %w", root, err)
	}
	return Source{Dir: dir, Env: []string{"GOWORK=off"}, Rev: EmbeddedRev()}, nil
}

// suitesCacheDir is $XDG_CACHE_HOME/xmitcheck/suites (else
// ~/.cache/xmitcheck/suites), beside the kernels.
func suitesCacheDir() (string, error) {
	k, err := kernels.DefaultCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(k), "suites"), nil
}

// moduleRoot walks up from dir to the first go.mod and returns its
// directory and module path.
func moduleRoot(dir string) (root, path string, ok bool) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", "", false
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			return dir, modulePath(data), true
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", "", false
		}
		dir = up
	}
}

// modulePath is the path go.mod's module directive names.
func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// gitDescribe names a checkout's commit (a tag when one is near, -dirty
// with uncommitted changes).
func gitDescribe(ctx context.Context, dir string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "describe", "--always", "--dirty", "--abbrev=12").Output()
	if err != nil {
		return "an unknown revision (not a git checkout)"
	}
	return strings.TrimSpace(string(out))
}

// embeddedSum is the SHA-256 of the embedded source: each file's path, size
// and bytes, in WalkDir's (lexical) order.
var embeddedSum = sync.OnceValue(func() string {
	sum, err := treeSum(tree.Source)
	if err != nil {
		panic(err) // an embed.FS always reads
	}
	return sum
})

func embeddedKey() string { return embeddedSum()[:16] }

// EmbeddedRev names the source built into this binary.
func EmbeddedRev() string { return "embedded sha256:" + embeddedSum()[:12] }

func treeSum(fsys fs.FS) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(data))
		h.Write(data)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

// staleAfter is the age of a temporary extraction that no run can still be
// writing (one takes milliseconds): a crash left it.
const staleAfter = time.Hour

// extract writes fsys into root/key once and returns that directory. It is
// written into a temporary directory beside it and renamed into place, so
// root/key exists only complete; a later call, or another xmitcheck that
// lost the race, uses it. Files are read-only, as in Go's module cache:
// the source is the binary's, not to be edited. A tree found there is
// checked against fsys before each use: one that differs (a file cut short
// by a full disk or an interrupted copy, edited, missing or added) is
// moved aside and written again, and note says so in one line.
func extract(fsys fs.FS, root, key string, note func(string)) (string, error) {
	final := filepath.Join(root, key)
	if st, err := os.Stat(final); err == nil && st.IsDir() {
		diff, err := differs(fsys, final)
		if err != nil {
			return "", err
		}
		if diff == "" {
			return final, nil
		}
		if err := moveAside(root, key); err != nil {
			return "", fmt.Errorf("%s differs from the source it is named for (%s) and cannot be replaced: %w",
				final, diff, err)
		}
		note(fmt.Sprintf("%s differs from the source it is named for (%s): extracting it again", final, diff))
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	removeStale(root, key)
	tmp, err := os.MkdirTemp(root, "."+key+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	err = fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		to := filepath.Join(tmp, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		return copyOut(fsys, path, to)
	})
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		if st, serr := os.Stat(final); serr == nil && st.IsDir() {
			return final, nil // another xmitcheck put it there first
		}
		return "", err
	}
	return final, nil
}

func copyOut(fsys fs.FS, path, to string) error {
	in, err := fsys.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// differs compares the tree in dir with fsys, file by file, and says how
// the first that differs does ("" when none does).
func differs(fsys fs.FS, dir string) (string, error) {
	var diff string
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		want, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
		switch {
		case err != nil:
			diff = fmt.Sprintf("%s: %v", path, errors.Unwrap(err))
		case len(got) != len(want):
			diff = fmt.Sprintf("%s is %d bytes, not %d", path, len(got), len(want))
		case !bytes.Equal(got, want):
			diff = path + " has other bytes"
		}
		if diff != "" {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil || diff != "" {
		return diff, err
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if _, err := fs.Stat(fsys, filepath.ToSlash(rel)); err != nil {
			diff = filepath.ToSlash(rel) + " was added"
			return fs.SkipAll
		}
		return nil
	})
	return diff, err
}

// moveAside takes the tree root/key out of the way, into a temporary
// directory that it then removes (removeStale does, later, what it
// cannot). Another xmitcheck that moved it first is no error.
func moveAside(root, key string) error {
	tmp, err := os.MkdirTemp(root, "."+key+".tmp-damaged-")
	if err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(root, key), filepath.Join(tmp, key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		os.Remove(tmp)
		return err
	}
	os.RemoveAll(tmp)
	return nil
}

// removeStale removes what crashed extractions of key left behind.
func removeStale(root, key string) {
	old, _ := filepath.Glob(filepath.Join(root, "."+key+".tmp-*"))
	for _, dir := range old {
		if st, err := os.Stat(dir); err == nil && time.Since(st.ModTime()) > staleAfter {
			os.RemoveAll(dir)
		}
	}
}
