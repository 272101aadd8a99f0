package ksft

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestWriteCollection: the list names collection:test per suite, the
// settings hold the timeout, each program is an executable script that
// runs the collection's xmitcheck on its suite, and the files a test reads
// are there.
func TestWriteCollection(t *testing.T) {
	tr := Tree{Root: t.TempDir()}
	assert.NilError(t, tr.WriteCollection([]string{"tun", "qdisc"}, 0, "EXPECTATIONS", "CONFIG_TUN=y\n", "000"))
	list, err := os.ReadFile(filepath.Join(tr.Root, "kselftest-list.txt"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(list), "xmitcheck:tun\nxmitcheck:qdisc\n"))
	suites, err := tr.Suites()
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(suites, []string{"tun", "qdisc"}))
	assert.Check(t, is.Equal(tr.SettingsTimeout(), Timeout), "0 is the default timeout")
	for name, want := range map[string]string{
		ExpectationsFile: "EXPECTATIONS", ConfigFile: "CONFIG_TUN=y\n", ExpectFile: "000\n",
		SettingsFile: "timeout=300\n",
	} {
		got, err := os.ReadFile(tr.Path(name))
		assert.NilError(t, err, name)
		assert.Check(t, is.Equal(string(got), want), name)
	}
	st, err := os.Stat(tr.Path("tun"))
	assert.NilError(t, err)
	assert.Check(t, st.Mode().Perm()&0o111 != 0, "the runner runs programs that are executable")
	prog, err := os.ReadFile(tr.Path("tun"))
	assert.NilError(t, err)
	assert.Check(t, strings.HasPrefix(string(prog), "#!/bin/sh\n"))
	assert.Check(t, is.Contains(string(prog), `exec "$(dirname "$0")/bin/xmitcheck" kselftest tun "$@"`))
	assert.Check(t, is.Equal(FromProgram(tr.Bin(Program)), tr), "the program finds its tree")

	assert.NilError(t, tr.WriteCollection([]string{"tun"}, 900, "", "", ""))
	assert.Check(t, is.Equal(tr.SettingsTimeout(), 900))
}

// TestSuitesNotACollection: a directory without the list is no collection.
func TestSuitesNotACollection(t *testing.T) {
	_, err := Tree{Root: t.TempDir()}.Suites()
	assert.ErrorContains(t, err, "not an installed collection")
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "kselftest-list.txt"), []byte("net:tun\n"), 0o644))
	_, err = Tree{Root: dir}.Suites()
	assert.ErrorContains(t, err, "lists no xmitcheck test")
}

// TestCopyRunner copies run_kselftest.sh and kselftest/, modes kept, from a
// selftests directory laid out as a kernel tree's, and refuses one without.
func TestCopyRunner(t *testing.T) {
	src := t.TempDir()
	assert.NilError(t, os.MkdirAll(filepath.Join(src, "kselftest"), 0o755))
	assert.NilError(t, os.MkdirAll(filepath.Join(src, "net"), 0o755))
	for name, mode := range map[string]os.FileMode{
		"run_kselftest.sh": 0o744, "kselftest/runner.sh": 0o744, "kselftest/ktap_helpers.sh": 0o644,
		"net/tun.c": 0o644,
	} {
		assert.NilError(t, os.WriteFile(filepath.Join(src, name), []byte(name), mode))
	}
	tr := Tree{Root: t.TempDir()}
	assert.NilError(t, tr.CopyRunner(src))
	for name, mode := range map[string]os.FileMode{
		"run_kselftest.sh": 0o744, "kselftest/runner.sh": 0o744, "kselftest/ktap_helpers.sh": 0o644,
	} {
		st, err := os.Stat(filepath.Join(tr.Root, name))
		assert.NilError(t, err)
		assert.Check(t, is.Equal(st.Mode().Perm(), mode), name)
	}
	_, err := os.Stat(filepath.Join(tr.Root, "net"))
	assert.Check(t, os.IsNotExist(err), "only the runner is copied")

	assert.ErrorContains(t, tr.CopyRunner(t.TempDir()), "has no run_kselftest.sh: give a kernel source tree")
	assert.NilError(t, os.Remove(filepath.Join(src, "kselftest/runner.sh")))
	assert.ErrorContains(t, tr.CopyRunner(src), "has no kselftest/runner.sh")
}
