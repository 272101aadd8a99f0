package vmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// scanFile runs the scanner over a fixture as a console would deliver it.
func scanFile(t *testing.T, name string) ([]Splat, *splatScanner) {
	data, err := os.ReadFile(filepath.Join("testdata", "splats", name))
	assert.NilError(t, err)
	var sc splatScanner
	var got []Splat
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if l != "" {
			got = append(got, sc.Line(l)...)
		}
	}
	return append(got, sc.Flush()...), &sc
}

func TestSplatFixtures(t *testing.T) {
	for _, tc := range []struct {
		file      string
		kinds     []string
		first     string // in the first line of the first splat
		last      string // in the last line of the first splat
		lines     int    // of the first splat
		panicking bool
	}{
		{file: "warn.txt", kinds: []string{KindWarning},
			first: "WARNING: at net/sched/sch_generic.c:255", last: "---[ end trace 1e517aac3df85c47 ]---", lines: 18},
		{file: "warn_cpu.txt", kinds: []string{KindWarning},
			first: "at net/ipv6/ip6_fib.c:1457", last: "fib6_prune_clones", lines: 13},
		{file: "kasan.txt", kinds: []string{KindKASAN},
			first: "BUG: KASAN: slab-use-after-free in kernfs_test_super", last: "kernfs_test_super", lines: 14},
		{file: "lockdep.txt", kinds: []string{KindLockdep},
			first: "possible circular locking dependency detected", last: "set_all_modules_text_rw", lines: 17},
		{file: "rcu_stall.txt", kinds: []string{KindRCUStall},
			first: "rcu_preempt detected stalls", last: "stack dump:", lines: 8},
		{file: "hung_task.txt", kinds: []string{KindHungTask, KindHungTask, KindHungTask},
			first: "task kworker/2:1:5747 blocked", last: "disables this message", lines: 3},
		{file: "bug.txt", kinds: []string{KindBUG},
			first: "BUG: kernel NULL pointer dereference", last: "Comm: cat", lines: 6},
		{file: "panic_sysrq.txt", kinds: []string{KindPanic}, panicking: true,
			first: "Kernel panic - not syncing: sysrq triggered crash", last: "Kernel Offset: disabled", lines: 39},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, sc := scanFile(t, tc.file)
			var kinds []string
			for _, s := range got {
				kinds = append(kinds, s.Kind)
			}
			assert.Assert(t, is.DeepEqual(kinds, tc.kinds))
			s := got[0]
			assert.Check(t, is.Contains(s.Lines[0], tc.first))
			assert.Check(t, is.Contains(s.Lines[len(s.Lines)-1], tc.last))
			assert.Check(t, is.Len(s.Lines, tc.lines))
			assert.Check(t, is.Equal(sc.panicked, tc.panicking))
		})
	}
}

func TestSplatSequences(t *testing.T) {
	feed := func(lines ...string) []Splat {
		var sc splatScanner
		var got []Splat
		for _, l := range lines {
			got = append(got, sc.Line(l)...)
		}
		return append(got, sc.Flush()...)
	}
	t.Run("quiet console reports nothing", func(t *testing.T) {
		got := feed("[    1.0] virtio_net: probe", "Run /init as init process", "xmitcheck guest: hello")
		assert.Check(t, is.Len(got, 0))
	})
	t.Run("a panic after a BUG is its own report", func(t *testing.T) {
		got := feed(
			"[ 2.0] BUG: unable to handle page fault for address: 0000000000001234",
			"[ 2.0] Oops: 0000 [#1] SMP NOPTI",
			"[ 2.0] ---[ end trace 0000000000000000 ]---",
			"[ 2.1] Kernel panic - not syncing: Fatal exception",
		)
		assert.Assert(t, is.Len(got, 2))
		assert.Check(t, is.Equal(got[0].Kind, KindBUG))
		assert.Check(t, is.Len(got[0].Lines, 3))
		assert.Check(t, is.Equal(got[1].Kind, KindPanic))
	})
	t.Run("the guest's own line ends a report", func(t *testing.T) {
		got := feed("[ 3.0] INFO: task foo:1 blocked for more than 10 seconds.", "[ 3.0] detail",
			"xmitcheck guest: load module x: ENOENT", "[ 3.1] unrelated")
		assert.Assert(t, is.Len(got, 1))
		assert.Check(t, is.Len(got[0].Lines, 2))
	})
	t.Run("a WARN_ON in the 6.18 format", func(t *testing.T) {
		got := feed("[ 4.0] WARNING: kernel/locking/lockdep.c:123 at check_flags+0x1/0x2, CPU#0: swapper/0")
		assert.Assert(t, is.Len(got, 1))
		assert.Check(t, is.Equal(got[0].Kind, KindWarning), "a WARN_ON in lockdep.c is a WARNING, not a lockdep report")
	})
	t.Run("an endless report is cut", func(t *testing.T) {
		lines := []string{"[ 5.0] UBSAN: shift-out-of-bounds in net/core/dev.c:1:2"}
		for range 2 * maxSplatLines {
			lines = append(lines, "[ 5.0]  frame")
		}
		got := feed(lines...)
		assert.Assert(t, is.Len(got, 1))
		assert.Check(t, is.Equal(got[0].Kind, KindUBSAN))
		assert.Check(t, is.Len(got[0].Lines, maxSplatLines))
	})
}

// TestPanicAfterFirmware: the firmware leaves its last words on the line
// the kernel's first panic line continues; the panic is still seen.
func TestPanicAfterFirmware(t *testing.T) {
	var sc splatScanner
	sc.Line("Booting from ROM..\x1bc\x1b[?7l\x1b[2J[    0.347208] Kernel panic - not syncing: no init")
	assert.Check(t, sc.panicked)
}

// TestSplatWhere holds the scanner to the marks in the kernel log: a
// report belongs to the innermost test window that holds it, else to the
// binary that runs, or that ran last, and to nothing before the first.
func TestSplatWhere(t *testing.T) {
	warn := func(n int) []string {
		return []string{
			fmt.Sprintf("[   %d.000001] WARNING: CPU: 1 PID: 9 at net/core/dev.c:%d x", n, n),
			fmt.Sprintf("[   %d.000002] ---[ end trace 0000000000000000 ]---", n),
		}
	}
	mark := func(kind feature.MarkKind, name string) string {
		return "[    9.000000] xmitcheck mark: " + string(kind) + " " + name
	}
	var lines []string
	add := func(l ...string) { lines = append(lines, l...) }
	add(warn(1)...) // the boot
	add(mark(feature.BinaryStart, "suites/tun"), mark(feature.TestStart, "TestA"))
	add(warn(2)...) // in TestA
	add(mark(feature.TestStart, "TestA/sub"))
	add(warn(3)[0], mark(feature.TestEnd, "TestA/sub"), warn(3)[1]) // in TestA/sub, a mark amid its lines
	add(mark(feature.TestEnd, "TestA"))
	add(warn(4)...) // between tests
	add(mark(feature.TestStart, "TestB"), mark(feature.TestEnd, "TestB"), mark(feature.BinaryExit, "suites/tun"))
	add(warn(5)...) // after the binary exited
	add(mark(feature.BinaryStart, "suites/vhost"))
	add(warn(6)...) // the next binary, before its first test

	var s splatScanner
	var got []Splat
	for _, l := range lines {
		got = append(got, s.Line(l)...)
	}
	got = append(got, s.Flush()...)
	type where struct {
		Bin, Test string
		Exited    bool
		Lines     int
	}
	var ws []where
	for _, sp := range got {
		ws = append(ws, where{sp.Binary, sp.Test, sp.Exited, len(sp.Lines)})
	}
	assert.Check(t, is.DeepEqual(ws, []where{
		{"", "", false, 2},
		{"suites/tun", "TestA", false, 2},
		{"suites/tun", "TestA/sub", false, 2},
		{"suites/tun", "", false, 2},
		{"suites/tun", "", true, 2},
		{"suites/vhost", "", false, 2},
	}))
	assert.Check(t, is.Equal(got[3].Where(), "outside its tests"))
	assert.Check(t, is.Equal(got[4].Where(), "after the binary exited"))
	assert.Check(t, is.Equal(got[1].Where(), ""))
}
