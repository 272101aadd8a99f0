package runner

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	tree "github.com/xmitcheck/xmitcheck"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// TestEmbeddedSourceComplete holds the embedded source to what go needs to
// compile, outside any checkout, every suite (with the test packages of
// vmtest/testdata) and cmd/xmitcheck (the guest's static init): each of
// their packages in the module, and each file go list says it builds from.
func TestEmbeddedSourceComplete(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-test",
		"-json=ImportPath,Dir,GoFiles,CgoFiles,TestGoFiles,XTestGoFiles,EmbedFiles,TestEmbedFiles,XTestEmbedFiles,"+
			"OtherFiles,HFiles,SFiles,IgnoredGoFiles,Module",
		"./suites/...", "./vmtest/testdata/...", "./cmd/xmitcheck")
	cmd.Dir = filepath.Join("..", "..", "..")
	out, err := cmd.Output()
	assert.NilError(t, err, "go list")
	root, err := filepath.Abs(cmd.Dir)
	assert.NilError(t, err)
	want := map[string]bool{"go.mod": true, "go.sum": true}
	pkgs := 0
	for d := json.NewDecoder(strings.NewReader(string(out))); d.More(); {
		var p struct {
			ImportPath, Dir string
			Module          *struct{ Path string }
			GoFiles, CgoFiles, TestGoFiles, XTestGoFiles, EmbedFiles, TestEmbedFiles, XTestEmbedFiles,
			OtherFiles, HFiles, SFiles, IgnoredGoFiles []string
		}
		assert.NilError(t, d.Decode(&p))
		if p.Module == nil || p.Module.Path != Module || strings.HasSuffix(p.ImportPath, ".test") {
			continue
		}
		pkgs++
		rel, err := filepath.Rel(root, p.Dir)
		assert.NilError(t, err)
		for _, f := range slices.Concat(p.GoFiles, p.CgoFiles, p.TestGoFiles, p.XTestGoFiles, p.EmbedFiles,
			p.TestEmbedFiles, p.XTestEmbedFiles, p.OtherFiles, p.HFiles, p.SFiles, p.IgnoredGoFiles) {
			want[path.Join(filepath.ToSlash(rel), f)] = true
		}
	}
	assert.Check(t, pkgs > 20, "go list named %d of the module's packages", pkgs)
	for f := range want {
		_, err := fs.Stat(tree.Source, f)
		assert.Check(t, err, "the embedded source lacks %s: add its directory to source.go's go:embed", f)
	}
}

// maxSourceFile bounds a file of the embedded source: the largest, a
// recorded event stream of results' testdata, is 80 kB; a stray binary
// (cmd/xmitcheck/xmitcheck, a suite's .test) is megabytes.
const maxSourceFile = 1 << 20

// TestEmbeddedSourceTracked: nothing git ignores (a test binary, a build
// cache) nor anything of a binary's size rides in the binary.
func TestEmbeddedSourceTracked(t *testing.T) {
	var files []string
	err := fs.WalkDir(tree.Source, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, p)
		info, err := d.Info()
		if err == nil && info.Size() > maxSourceFile {
			t.Errorf("the embedded source holds %s, %d bytes: remove it and rebuild", p, info.Size())
		}
		return err
	})
	assert.NilError(t, err)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	cmd := exec.Command("git", append([]string{"check-ignore", "--no-index", "--"}, files...)...)
	cmd.Dir = filepath.Join("..", "..", "..")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return // none is ignored
	}
	if err != nil {
		t.Skipf("git check-ignore: %v (not a git checkout?)", err)
	}
	t.Errorf("the embedded source holds files git ignores; remove them and rebuild:\n%s", out)
}

// TestExtract: the tree appears only complete, once; a second call (or
// another process) uses it as it is; a failed extraction and a crashed
// one's leftovers leave nothing behind.
func TestExtract(t *testing.T) {
	src := fstest.MapFS{
		"go.mod":                {Data: []byte("module example.com/m\n")},
		"suites/tun/a_test.go":  {Data: []byte("package tun\n")},
		"suites/tun/testdata/x": {Data: []byte("x")},
	}
	root := t.TempDir()
	key := "0123456789abcdef"
	// What a crash an hour ago left, and an extraction under way now.
	crashed := filepath.Join(root, "."+key+".tmp-1")
	running := filepath.Join(root, "."+key+".tmp-2")
	for _, d := range []string{crashed, running} {
		assert.NilError(t, os.MkdirAll(filepath.Join(d, "suites"), 0o755))
	}
	old := time.Now().Add(-2 * staleAfter)
	assert.NilError(t, os.Chtimes(crashed, old, old))

	var notes []string
	note := func(s string) { notes = append(notes, s) }
	dir, err := extract(src, root, key, note)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(dir, filepath.Join(root, key)))
	for name, f := range src {
		got, err := os.ReadFile(filepath.Join(dir, name))
		assert.NilError(t, err)
		assert.Check(t, is.Equal(string(got), string(f.Data)))
	}
	sum, err := treeSum(os.DirFS(dir))
	assert.NilError(t, err)
	want, err := treeSum(src)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(sum, want), "the extracted tree is the embedded one")
	_, err = os.Stat(crashed)
	assert.Check(t, errors.Is(err, fs.ErrNotExist), "a crashed extraction's leftovers are removed")
	_, err = os.Stat(running)
	assert.Check(t, err, "an extraction under way is left alone")

	// Idempotent: the second call finds the tree whole and writes nothing.
	st, err := os.Stat(filepath.Join(dir, "go.mod"))
	assert.NilError(t, err)
	again, err := extract(src, root, key, note)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(again, dir))
	st2, err := os.Stat(filepath.Join(dir, "go.mod"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(st.ModTime(), st2.ModTime()))
	assert.Check(t, is.Len(notes, 0))

	// A failure half-way leaves neither the tree nor a temporary one.
	broken := failingFS{src, "suites/tun/testdata/x"}
	_, err = extract(broken, root, "fedcba9876543210", note)
	assert.Check(t, is.ErrorContains(err, "read failed"))
	left, err := filepath.Glob(filepath.Join(root, "*fedcba9876543210*"))
	assert.NilError(t, err)
	assert.Check(t, is.Len(left, 0), "left behind: %v", left)
}

// TestExtractDamaged: a tree that differs from its source in any way is
// written again before it is used, with one note that says how it
// differed; one that cannot be replaced is an error that says why.
func TestExtractDamaged(t *testing.T) {
	src := fstest.MapFS{
		"go.mod":               {Data: []byte("module example.com/m\n")},
		"suites/tun/a_test.go": {Data: []byte("package tun\n")},
		"suites/tun/x.o":       {Data: []byte("0123456789")},
	}
	for _, tc := range []struct {
		name, want string
		damage     func(dir string) error
	}{
		{"Cut", "suites/tun/x.o is 4 bytes, not 10", func(dir string) error {
			return writeOver(filepath.Join(dir, "suites/tun/x.o"), "0123")
		}},
		{"Edited", "suites/tun/a_test.go has other bytes", func(dir string) error {
			return writeOver(filepath.Join(dir, "suites/tun/a_test.go"), "package xyz\n")
		}},
		{"Missing", "go.mod: no such file or directory", func(dir string) error {
			return os.Remove(filepath.Join(dir, "go.mod"))
		}},
		{"Added", "suites/tun/b_test.go was added", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "suites/tun/b_test.go"), []byte("package tun\n"), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, key := t.TempDir(), "0123456789abcdef"
			var notes []string
			note := func(s string) { notes = append(notes, s) }
			dir, err := extract(src, root, key, note)
			assert.NilError(t, err)
			assert.NilError(t, tc.damage(dir))
			again, err := extract(src, root, key, note)
			assert.NilError(t, err)
			assert.Check(t, is.Equal(again, dir))
			assert.Assert(t, is.Len(notes, 1))
			assert.Check(t, is.Equal(notes[0], dir+" differs from the source it is named for ("+tc.want+
				"): extracting it again"))
			diff, err := differs(src, dir)
			assert.NilError(t, err)
			assert.Check(t, is.Equal(diff, ""), "written again whole")
			left, err := filepath.Glob(filepath.Join(root, ".*"))
			assert.NilError(t, err)
			assert.Check(t, is.Len(left, 0), "left behind: %v", left)
		})
	}
	t.Run("ReadOnlyRoot", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes into a read-only directory")
		}
		root, key := t.TempDir(), "0123456789abcdef"
		dir, err := extract(src, root, key, func(s string) { t.Log(s) })
		assert.NilError(t, err)
		assert.NilError(t, writeOver(filepath.Join(dir, "go.mod"), "x"))
		assert.NilError(t, os.Chmod(root, 0o555))
		defer os.Chmod(root, 0o755)
		_, err = extract(src, root, key, func(s string) { t.Log(s) })
		assert.Check(t, is.ErrorContains(err, "differs from the source it is named for (go.mod is 1 bytes, not 21) "+
			"and cannot be replaced"))
	})
}

// writeOver replaces a read-only file's content.
func writeOver(path, data string) error {
	if err := os.Chmod(path, 0o644); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(data), 0o444)
}

// failingFS fails to open one file.
type failingFS struct {
	fs.FS
	bad string
}

func (f failingFS) Open(name string) (fs.File, error) {
	if name == f.bad {
		return nil, errors.New("read failed")
	}
	return f.FS.Open(name)
}

// TestSuitesChoice: -C names a checkout, the current directory's checkout
// comes next, the embedded source last; a -C that is no module and a
// missing go are one line each.
func TestSuitesChoice(t *testing.T) {
	ctx := context.Background()
	checkout, err := filepath.Abs(filepath.Join("..", "..", ".."))
	assert.NilError(t, err)
	src, err := FindSuites(ctx, checkout)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(src.Dir, checkout))
	assert.Check(t, strings.HasPrefix(src.Rev, "checkout "+checkout+" at "), src.Rev)

	t.Chdir(filepath.Join(checkout, "suites"))
	src, err = FindSuites(ctx, "")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(src.Dir, filepath.Join(checkout, "suites")), "go runs where it always did")

	t.Chdir(t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	src, err = FindSuites(ctx, "")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(src.Rev, EmbeddedRev()))
	assert.Check(t, is.Contains(src.Env, "GOWORK=off"))

	_, err = FindSuites(ctx, t.TempDir())
	assert.Check(t, is.ErrorContains(err, "no go.mod there or above: give an xmitcheck checkout"))
	t.Setenv("PATH", "/nonexistent")
	_, err = FindSuites(ctx, "")
	assert.Check(t, is.ErrorContains(err, "go not found: xmitcheck compiles the suites with the Go toolchain"))
}

// TestInitBinaryOutsideCheckout: a dynamically linked xmitcheck (go install
// with cgo, as this test binary may be) rebuilds itself static for the
// guest from its embedded source, from any directory.
func TestInitBinaryOutsideCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/xmitcheck")
	}
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	assert.NilError(t, err)
	t.Setenv("GOCACHE", strings.TrimSpace(string(gocache)))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	init, err := InitBinary(context.Background(), t.TempDir())
	assert.NilError(t, err)
	assert.Check(t, Static(init), "%s is not static", init)
}

// TestRevisionInResults: every run notes xmitcheck's version and the
// suites' source (KTAP, JUnit and JSON carry notes).
func TestRevisionInResults(t *testing.T) {
	k := &kernels.Kernel{Name: "debian:7.3", Release: "7.3.4"}
	o := &Options{SuitesRev: "embedded sha256:0123456789ab"}
	r, err := o.RunOne(context.Background(), k, &int3Backend{}, []vmtest.Binary{{Name: "example.org/suites/a"}},
		false, io.Discard)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(r.Notes, Version()+"; suites: embedded sha256:0123456789ab"))
}
