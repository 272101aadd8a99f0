// Package ksft is xmitcheck as a kselftest collection: the tree that
// `xmitcheck suites install` writes for the kernel's own runner
// (run_kselftest.sh), and what a test of it does around its suite on the
// kernel it runs on: load the modules the suite needs, mount what the
// tests read, and write the results for a lab's parser.
//
// The tree holds no Go toolchain and needs no network: the runner from a
// kernel source tree, the list and settings, and per suite a program (the
// static xmitcheck, `xmitcheck kselftest SUITE`) that runs the suite's
// static test binary, judges it with the same judge as `xmitcheck run`
// and prints KTAP.
package ksft

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Collection is the collection's name in kselftest-list.txt and its
// directory in the tree.
const Collection = "xmitcheck"

// Timeout is each test's timeout in the collection's settings, in seconds.
// The slowest suites (tun, vhost) take 30 to 35 s under TCG on two cores
// (docs/speed.md), up to 90 s in a vng guest on a loaded machine: 300 s
// leaves them more than three times that, and a suite that needs more
// has hung (docs/kselftest.md).
const Timeout = 300

// Files of the collection's directory.
const (
	// BinDir holds the static binaries: xmitcheck, test2json and each
	// suite's SUITE.test.
	BinDir = "bin"
	// ExpectationsFile is the copy of kernels/expectations the tests are
	// judged by.
	ExpectationsFile = "expectations"
	// ExpectFile, when there, holds an expectation (--expect's syntax)
	// given at install time, over what the file says.
	ExpectFile = "expect"
	// SettingsFile is the kselftest runner's per-collection settings.
	SettingsFile = "settings"
	// ConfigFile is the kernel config fragment the suites need, as every
	// kselftest target ships one.
	ConfigFile = "config"
	// Program is the static xmitcheck in BinDir, test2json the test2json
	// it feeds the test binaries' output through.
	Program   = "xmitcheck"
	Test2JSON = "test2json"
)

// Runner names the kernel's kselftest runner, as tools/testing/selftests
// of a kernel source tree holds it and as the kselftest install tree
// places it: run_kselftest.sh, and the kselftest/ directory it sources
// (runner.sh, ktap_helpers.sh and their helpers).
var Runner = []string{"run_kselftest.sh", "kselftest"}

// SelftestsDir is where a kernel source tree keeps its selftests.
const SelftestsDir = "tools/testing/selftests"

// Tree is an installed collection, rooted where run_kselftest.sh is.
type Tree struct{ Root string }

// Dir is the collection's directory.
func (t Tree) Dir() string { return filepath.Join(t.Root, Collection) }

// Path is a file of the collection's directory.
func (t Tree) Path(name string) string { return filepath.Join(t.Dir(), name) }

// Bin is a file of BinDir.
func (t Tree) Bin(name string) string { return filepath.Join(t.Dir(), BinDir, name) }

// TestBinary is suite's static test binary.
func (t Tree) TestBinary(suite string) string { return t.Bin(suite + ".test") }

// FromProgram is the tree whose program is at path (DIR/xmitcheck/bin/xmitcheck).
func FromProgram(path string) Tree {
	return Tree{Root: filepath.Dir(filepath.Dir(filepath.Dir(path)))}
}

// CopyRunner copies the kernel's kselftest runner from src, a kernel
// source tree's tools/testing/selftests, into t: the files the kernel's
// own `make install` copies, as they are.
func (t Tree) CopyRunner(src string) error {
	if _, err := os.Stat(filepath.Join(src, "run_kselftest.sh")); err != nil {
		return fmt.Errorf("%s has no run_kselftest.sh: give a kernel source tree (its %s holds the runner)",
			src, SelftestsDir)
	}
	if _, err := os.Stat(filepath.Join(src, "kselftest", "runner.sh")); err != nil {
		return fmt.Errorf("%s has no kselftest/runner.sh: give a kernel source tree from 5.2 or later", src)
	}
	for _, name := range Runner {
		err := filepath.WalkDir(filepath.Join(src, name), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, path)
			to := filepath.Join(t.Root, rel)
			if d.IsDir() {
				return os.MkdirAll(to, 0o755)
			}
			if !d.Type().IsRegular() {
				return nil
			}
			return copyFile(path, to)
		})
		if err != nil {
			return fmt.Errorf("copying the kselftest runner: %w", err)
		}
	}
	return nil
}

// WriteCollection writes the collection's list, settings and programs for
// suites, with timeout seconds per test (0: Timeout). The binaries are
// the caller's to put in BinDir.
func (t Tree) WriteCollection(suites []string, timeout int, expectations, config, expect string) error {
	if timeout <= 0 {
		timeout = Timeout
	}
	if err := os.MkdirAll(filepath.Join(t.Dir(), BinDir), 0o755); err != nil {
		return err
	}
	var list strings.Builder
	for _, s := range suites {
		fmt.Fprintf(&list, "%s:%s\n", Collection, s)
		if err := os.WriteFile(t.Path(s), []byte(programScript(s)), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		filepath.Join(t.Root, "kselftest-list.txt"): list.String(),
		t.Path(SettingsFile):                        "timeout=" + strconv.Itoa(timeout) + "\n",
		t.Path(ExpectationsFile):                    expectations,
		t.Path(ConfigFile):                          config,
	}
	if expect != "" {
		files[t.Path(ExpectFile)] = expect + "\n"
	}
	for path, text := range files {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// programScript is a suite's test program: what the runner runs, with
// the arguments of KSELFTEST_SUITE_ARGS.
func programScript(suite string) string {
	return "#!/bin/sh\n" +
		"# xmitcheck's " + suite + " suite as a kselftest (written by `xmitcheck suites install`): its test\n" +
		"# binary on this kernel, judged; KTAP on stdout; exit 0 pass, 1 fail, 4 skip (docs/kselftest.md).\n" +
		"exec \"$(dirname \"$0\")/" + BinDir + "/" + Program + "\" kselftest " + suite + " \"$@\"\n"
}

// Suites lists the suites of t, from its kselftest-list.txt.
func (t Tree) Suites() ([]string, error) {
	data, err := os.ReadFile(filepath.Join(t.Root, "kselftest-list.txt"))
	if err != nil {
		return nil, fmt.Errorf("not an installed collection (xmitcheck suites install writes one): %w", err)
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), Collection+":"); ok {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("kselftest-list.txt lists no " + Collection + " test")
	}
	return out, nil
}

// SettingsTimeout reads the timeout of the collection's settings, in seconds; 0
// when it has none.
func (t Tree) SettingsTimeout() int {
	data, err := os.ReadFile(t.Path(SettingsFile))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "timeout="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	st, err := os.Stat(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, st.Mode().Perm())
}
