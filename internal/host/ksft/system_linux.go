package ksft

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/kernels"
	"golang.org/x/sys/unix"
)

// loadModule loads a module file, decompressed here (.ko.xz, .ko.zst,
// .ko.gz): the kernel need not read compressed modules. One loaded
// already is loaded.
func loadModule(path string) error {
	data, err := kernels.ReadModule(path)
	if err != nil {
		return err
	}
	if err := unix.InitModule(data, ""); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("init_module: %w", err)
	}
	return nil
}

// mounts are the pseudo filesystems the tests read that a machine may not
// have mounted (the kernel's log, BPF objects, trace events), as the
// native guest's init mounts them.
var mounts = []struct{ fstype, target string }{
	{"bpf", "/sys/fs/bpf"},
	{"debugfs", "/sys/kernel/debug"},
	{"tracefs", "/sys/kernel/tracing"},
}

// MountMissing mounts each of mounts where nothing is mounted yet, and says
// what it did, one line each; a mount that fails is said too (the tests
// that need it report it). undo unmounts what it mounted: the machine is
// left as it was.
func MountMissing() (notes []string, undo func()) {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return []string{"cannot read /proc/self/mounts: " + err.Error() + "; nothing mounted"}, func() {}
	}
	mounted := map[string]bool{}
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 3 {
			mounted[f[1]] = true
		}
	}
	var done []string
	for _, m := range mounts {
		if mounted[m.target] {
			continue
		}
		err := os.MkdirAll(m.target, 0o755)
		if err == nil {
			err = unix.Mount(m.fstype, m.target, m.fstype, 0, "")
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("mount %s on %s: %v (the tests that need it report it)", m.fstype, m.target, err))
			continue
		}
		notes = append(notes, "mounted "+m.fstype+" on "+m.target+" for the run")
		done = append(done, m.target)
	}
	return notes, func() {
		for _, target := range slices.Backward(done) {
			unix.Unmount(target, unix.MNT_DETACH)
		}
	}
}
