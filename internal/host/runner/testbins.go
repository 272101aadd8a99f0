package runner

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/vmtest"
)

// BuildTests compiles the test binaries of pkgs, found in src (go test -c,
// static so they run in a bare initramfs), into dir and returns them, in
// order, with args. A package that is not there, or has no tests, is a
// usage error that lists the suites.
func BuildTests(ctx context.Context, src Source, dir string, pkgs, args []string) ([]vmtest.Binary, error) {
	listArgs := []string{"list", "-e", "-json=ImportPath,Name,Dir,GoFiles,TestGoFiles,XTestGoFiles,Error"}
	list := exec.CommandContext(ctx, "go", append(listArgs, pkgs...)...)
	list.Dir = src.Dir
	list.Env = append(os.Environ(), src.Env...)
	var stderr bytes.Buffer
	list.Stderr = &stderr
	out, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s in %s (the suites' %s): %v: %s",
			strings.Join(pkgs, " "), src.Dir, src.Rev, err, strings.TrimSpace(stderr.String()))
	}
	var bins []vmtest.Binary
	var paths []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Name, Dir              string
			GoFiles, TestGoFiles, XTestGoFiles []string
			Error                              *struct{ Err string }
		}
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		if p.Error != nil {
			return nil, Usagef("no package %s: %s", p.ImportPath, suiteList(src.Dir))
		}
		if len(p.TestGoFiles)+len(p.XTestGoFiles) == 0 {
			continue
		}
		paths = append(paths, p.ImportPath)
		var srcs []string
		for _, f := range slices.Concat(p.GoFiles, p.TestGoFiles, p.XTestGoFiles) {
			srcs = append(srcs, filepath.Join(p.Dir, f))
		}
		bins = append(bins, vmtest.Binary{
			Name:    p.ImportPath,
			Path:    filepath.Join(dir, p.Name+".test"),
			Args:    args,
			Sources: srcs,
		})
	}
	if len(bins) == 0 {
		return nil, Usagef("no tests in %s: %s", strings.Join(pkgs, " "), suiteList(src.Dir))
	}
	fmt.Fprintf(Progress(), "xmitcheck: building the suites from %s (%s)\n", src.Rev, src.Dir)
	build := exec.CommandContext(ctx, "go", append([]string{"test", "-c", "-o", dir + "/"}, paths...)...)
	build.Dir = src.Dir
	build.Env = append(os.Environ(), append(src.Env, "CGO_ENABLED=0")...)
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go test -c: %v\n%s", err, out)
	}
	return bins, nil
}

// InitBinary returns a statically linked xmitcheck for the guest: this
// executable when it is static, else one built into dir from the source
// embedded in it, which is this executable's own whatever the directory
// or -C (host and guest speak one protocol).
func InitBinary(ctx context.Context, dir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if Static(self) {
		return self, nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", errors.New("this xmitcheck is dynamically linked and go, which would rebuild it statically, " +
			"is not in PATH: install Go, or build xmitcheck with CGO_ENABLED=0")
	}
	src, err := embeddedSuites()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "xmitcheck-init")
	// No VCS stamp: the cache may sit in a git repository (a home directory
	// kept in git) that has nothing to do with this source.
	build := exec.CommandContext(ctx, "go", "build", "-buildvcs=false", "-o", out, Module+"/cmd/xmitcheck")
	build.Dir = src.Dir
	build.Env = append(os.Environ(), append(src.Env, "CGO_ENABLED=0")...)
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("this xmitcheck is dynamically linked and rebuilding it statically failed (%v: %s): "+
			"install it static: `CGO_ENABLED=0 go install %s/cmd/xmitcheck@latest` (make build in a checkout)",
			err, bytes.TrimSpace(b), Module)
	}
	return out, nil
}

// Static reports whether the ELF file at path has no program interpreter.
func Static(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// suiteList names the suites of the module dir is in, and where they are
// relative to dir, for a message about a package that is not there.
func suiteList(dir string) string {
	root, _, _ := moduleRoot(dir)
	suites := filepath.Join(root, "suites")
	entries, _ := os.ReadDir(suites)
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	rel, err := filepath.Rel(dir, suites)
	if len(names) == 0 || err != nil {
		return "no suites found in " + suites
	}
	if rel = filepath.ToSlash(rel); !strings.HasPrefix(rel, "..") {
		rel = "./" + rel
	}
	last := len(names) - 1
	if last > 0 {
		names[last-1] += " and " + names[last]
		names = names[:last]
	}
	return fmt.Sprintf("the suites are %s in %s (%[2]s/... runs all)", strings.Join(names, ", "), rel)
}
