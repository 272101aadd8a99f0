package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	tree "github.com/xmitcheck/xmitcheck"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
	"github.com/xmitcheck/xmitcheck/internal/host/ksft"
	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels"
)

const installAbout = `Write a kselftest collection into DIR that the kernel's own runner runs unmodified:
run_kselftest.sh and kselftest/ copied from a kernel source tree (--kselftest-from TREE, else
Debian's linux-source of --source, fetched once into the cache), kselftest-list.txt
(xmitcheck:tun, ...), xmitcheck/settings with each test's timeout, and per suite a program that
runs its static test binary, judges the seeds as xmitcheck run does and prints KTAP (exit 0, 1
or 4). Nothing in DIR needs Go, a network or a Debian mirror. As root: DIR/run_kselftest.sh -c
xmitcheck (docs/kselftest.md).`

// cmdInstall is `xmitcheck suites install`.
func cmdInstall(args []string) error {
	fs := newFlags("suites install", "-o DIR [--kselftest-from TREE] [flags] [PKG...]", installAbout)
	out := fs.String("o", "", "the directory to install into (replaced: new, empty, or a collection installed before)")
	from := fs.String("kselftest-from", "", "a kernel source tree whose "+ksft.SelftestsDir+" gives the runner")
	source := fs.String("source", kernels.DefaultKernel,
		"the catalog kernel whose Debian linux-source gives the runner, without --kselftest-from")
	spec := fs.String("expect", "", "an expectation the collection holds, over its expectation file (--expect's syntax)")
	timeout := fs.Int("timeout", ksft.Timeout, "each suite's timeout in the collection's settings, in seconds")
	c := fs.String("C", "", checkoutUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkInstall(*out, *spec, *timeout); err != nil {
		return err
	}
	ksftRunner, err := runnerSource(*from)
	if err != nil {
		return err
	}
	runnerFrom := ksftRunner
	pkgs := fs.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./suites/..."}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	src, err := runner.FindSuites(ctx, *c)
	if err != nil {
		return err
	}
	if ksftRunner == "" {
		if ksftRunner, runnerFrom, err = debianRunner(ctx, *source); err != nil {
			return err
		}
	}
	dst, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	var suites []string
	err = installInto(dst, func(t ksft.Tree) (err error) {
		suites, err = installCollection(ctx, t, src, ksftRunner, pkgs, *timeout, *spec)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Printf("xmitcheck: installed %s (%s; the runner from %s) into %s\n"+
		"run it as root: %s -c %s\n", strings.Join(suites, ", "), src.Rev, runnerFrom, dst,
		filepath.Join(dst, "run_kselftest.sh"), ksft.Collection)
	return nil
}

// checkInstall refuses an install without its directory, with an
// expectation that does not parse or a timeout too short, and a directory
// that holds anything but a collection.
func checkInstall(out, spec string, timeout int) error {
	if out == "" {
		return usagef("suites install: give -o DIR, the directory to install the collection into")
	}
	if _, err := expect.Parse(spec); err != nil {
		return usagef("suites install --expect: %v", err)
	}
	if timeout < 60 {
		return usagef("suites install --timeout %d: give at least 60 seconds "+
			"(the default, %d, is chosen in docs/kselftest.md)", timeout, ksft.Timeout)
	}
	return checkInstallDir(out)
}

// installInto has install write a collection into a directory beside dst
// that then replaces dst, so dst is never half-written.
func installInto(dst string, install func(ksft.Tree) error) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return fmt.Errorf("install directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := install(ksft.Tree{Root: tmp}); err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// installCollection writes the collection into t: the runner, the
// binaries, the list, settings and programs, the LAVA test definition.
func installCollection(ctx context.Context, t ksft.Tree, src runner.Source, ksftRunner string, pkgs []string,
	timeout int, spec string) ([]string, error) {
	if err := t.CopyRunner(ksftRunner); err != nil {
		return nil, err
	}
	fmt.Fprintf(runner.Progress(), "xmitcheck: building the suites from %s (%s)\n", src.Rev, src.Dir)
	if err := os.MkdirAll(t.Path(ksft.BinDir), 0o755); err != nil {
		return nil, err
	}
	bins, err := runner.BuildTests(ctx, src, t.Path(ksft.BinDir), pkgs, nil)
	if err != nil {
		return nil, err
	}
	var suites []string
	for _, b := range bins {
		s := path.Base(b.Name)
		if _, ok := kernels.SuiteModules[s]; !ok || !strings.HasSuffix(b.Name, "/suites/"+s) {
			return nil, usagef("suites install: %s is not a suite (suites/NAME): the collection holds suites only", b.Name)
		}
		suites = append(suites, s)
	}
	init, err := runner.InitBinary(ctx, t.Path(ksft.BinDir))
	if err != nil {
		return nil, err
	}
	if init != t.Bin(ksft.Program) {
		if err := copyExecutable(init, t.Bin(ksft.Program)); err != nil {
			return nil, err
		}
		os.Remove(filepath.Join(t.Path(ksft.BinDir), "xmitcheck-init"))
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", t.Bin(ksft.Test2JSON), "cmd/test2json")
	build.Dir = src.Dir
	build.Env = append(os.Environ(), append(src.Env, "CGO_ENABLED=0")...)
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build cmd/test2json: %v\n%s", err, out)
	}
	if err := t.WriteCollection(suites, timeout, kernels.ExpectationsFile(), kernels.Config, spec); err != nil {
		return nil, err
	}
	for f, mode := range map[string]os.FileMode{"xmitcheck-kselftest.yaml": 0o644, "xmitcheck-kselftest.sh": 0o755} {
		data, err := tree.Source.ReadFile("lava/" + f)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(t.Path(f), data, mode); err != nil {
			return nil, err
		}
	}
	return suites, nil
}

// checkInstallDir refuses a directory that holds something other than a
// collection installed before: install replaces it.
func checkInstallDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return writable(dir) // its parent takes a new directory
	}
	if err != nil {
		return usagef("suites install -o %s: %v", dir, err)
	}
	if len(ents) == 0 {
		return nil
	}
	if _, err := (ksft.Tree{Root: dir}).Suites(); err != nil {
		return usagef("suites install -o %s: it holds other files, and install replaces the directory: "+
			"give a new or empty one", dir)
	}
	return nil
}

// runnerSource is the runner's directory in the tree --kselftest-from
// names (a kernel source tree, or its selftests directory); "" when none
// is named.
func runnerSource(from string) (string, error) {
	if from == "" {
		return "", nil
	}
	for _, dir := range []string{filepath.Join(from, ksft.SelftestsDir), from} {
		if _, err := os.Stat(filepath.Join(dir, "run_kselftest.sh")); err == nil {
			return filepath.Abs(dir)
		}
	}
	return "", usagef("--kselftest-from %s: no %s/run_kselftest.sh there: give a kernel source tree",
		from, ksft.SelftestsDir)
}

// debianRunner is the runner of Debian's linux-source of the catalog
// kernel name, fetched once into the cache (debianSource), and what it is.
func debianRunner(ctx context.Context, name string) (dir, what string, err error) {
	root, what, err := debianSource(ctx, name)
	return filepath.Join(root, filepath.FromSlash(ksft.SelftestsDir)), what, err
}

// sourceMembers are what the cache keeps of a kernel source tree: the
// kselftest runner, and kunit.py, whose parser reads KTAP (the proofs and
// tests of the collection use it).
var sourceMembers = []string{
	ksft.SelftestsDir + "/run_kselftest.sh",
	ksft.SelftestsDir + "/kselftest",
	"tools/testing/kunit",
}

// debianSource fetches sourceMembers of Debian's linux-source of the
// catalog kernel name, once, into the cache, and returns the partial tree
// and what it is.
func debianSource(ctx context.Context, name string) (root, what string, err error) {
	cache, err := kernels.DefaultCacheDir()
	if err != nil {
		return "", "", err
	}
	root = filepath.Join(cache, "kselftest-runner", strings.ReplaceAll(name, ":", "-"))
	about := func() string {
		v, _ := os.ReadFile(filepath.Join(root, "VERSION"))
		return fmt.Sprintf("%s's linux-source %s, cached in %s", name, strings.TrimSpace(string(v)), root)
	}
	complete := true
	for _, m := range sourceMembers {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(m))); err != nil {
			complete = false
		}
	}
	if complete {
		return root, about(), nil
	}
	tmp := root + ".tmp"
	os.RemoveAll(tmp)
	defer os.RemoveAll(tmp)
	version, err := kernels.SourceFiles(ctx, name, sourceMembers, tmp, kernels.Options{Progress: runner.Progress()})
	if err != nil {
		return "", "", fmt.Errorf("the kselftest runner from %s's linux-source: %w (or give --kselftest-from TREE)",
			name, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "VERSION"), []byte(version+"\n"), 0o644); err != nil {
		return "", "", err
	}
	if err := os.RemoveAll(root); err != nil {
		return "", "", err
	}
	if err := os.Rename(tmp, root); err != nil {
		return "", "", err
	}
	return root, about(), nil
}

func copyExecutable(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}
