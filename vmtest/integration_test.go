package vmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/kernels"
)

// The integration tests boot debian:7.3 under TCG with the guest init and
// a tiny test binary (testdata/tiny), both built once per test binary run.

var built struct {
	once       sync.Once
	dir        string
	init, tiny string
	err        error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// guestBinaries builds the static xmitcheck (the guest init) and the tiny
// test binary, the way the CLI builds what it boots.
func guestBinaries(t testing.TB) (init, tiny string) {
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "vmtest-bins-")
		if built.err != nil {
			return
		}
		built.init = filepath.Join(built.dir, "xmitcheck")
		built.tiny = filepath.Join(built.dir, "tiny.test")
		for _, args := range [][]string{
			{"build", "-o", built.init, "../cmd/xmitcheck"},
			{"test", "-c", "-o", built.tiny, "./testdata/tiny"},
		} {
			cmd := exec.Command("go", args...)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				built.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				return
			}
		}
	})
	assert.NilError(t, built.err)
	return built.init, built.tiny
}

// bootKernel returns debian:7.3, or skips saying why it cannot boot it.
func bootKernel(t testing.TB) *kernels.Kernel {
	if testing.Short() {
		t.Skip("boots a VM; skipped with -short")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 not found: install qemu-system-x86 (make deps)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	k, err := kernels.Resolve(ctx, "debian:7.3", kernels.Options{})
	if err != nil {
		t.Skipf("cannot resolve debian:7.3: %v", err)
	}
	return k
}

// tinyJob runs the tiny binary with -test.run=run and XMITCHECK_TINY=mode.
//
// The job runs under single-threaded TCG: these tests check the harness
// (output, exits, hangs, panics), not the kernel, and under multi-threaded
// TCG the boot itself can die of the emulator's int3 artefact (see
// Job.SingleThreadTCG), which the runner retries and these tests would not
// (seen once in CI: TestNativeHangIsKilledAtIdleTimeout got "Fatal
// exception in interrupt" at boot). The boot benchmark keeps the default.
func tinyJob(t testing.TB, mode string, runs ...string) Job {
	_, tiny := guestBinaries(t)
	job := Job{Env: []string{"XMITCHECK_TINY=" + mode}, Accel: "tcg", Modules: []string{"tun"}, SingleThreadTCG: true,
		Timeouts: Timeouts{Boot: 3 * time.Minute, Idle: time.Minute, Overall: 10 * time.Minute}}
	for i, r := range runs {
		args := []string{"-test.v", "-test.run=^(" + r + ")$"}
		job.Binaries = append(job.Binaries, Binary{Name: fmt.Sprintf("tiny%d", i), Path: tiny, Args: args})
	}
	return job
}

// console is the console tail of out, for failure messages.
func console(out *Outcome) string {
	if out == nil {
		return "(no outcome)"
	}
	return strings.Join(out.Console, "\n")
}

func native(t testing.TB) *Native {
	init, _ := guestBinaries(t)
	return NewNative(NativeOptions{Init: init, CacheDir: t.TempDir()})
}

func TestNativeRunsBinaries(t *testing.T) {
	k := bootKernel(t)
	r := newRecorder()
	out, err := native(t).Run(context.Background(), k, tinyJob(t, "exit3", "TestGuest", "TestExit3"), r)
	assert.NilError(t, err, "console: %s", console(out))
	calls := normalize(r.calls)
	assert.Assert(t, is.Len(calls, 6), "calls: %q", calls)
	assert.Check(t, is.Equal(calls[0], "start tiny0"))
	assert.Check(t, is.Equal(calls[2], "exit tiny0 0"))
	assert.Check(t, is.Equal(calls[3], "start tiny1"))
	assert.Check(t, is.Equal(calls[5], "exit tiny1 3"))
	assert.Check(t, is.Contains(r.out("tiny0"), "hello from the guest, XMITCHECK_TINY=exit3"))
	assert.Check(t, is.Contains(r.out("tiny0"), "--- PASS: TestGuest"))
	assert.Check(t, strings.HasSuffix(r.out("tiny1"), "no newline before exit"),
		"the last bytes before the exit arrive: %q", r.out("tiny1"))
	assert.Check(t, is.Equal(out.Accel, "tcg"))
	assert.Check(t, out.BootToFirstTest > 0 && out.BootToFirstTest < out.Total,
		"boot %v total %v", out.BootToFirstTest, out.Total)
	assert.Check(t, is.Equal(out.Modules["tun"], ""), "modules: %v", out.Modules)
	assert.Check(t, is.Len(r.splats, 0))
	t.Logf("boot to first test %v, total %v", out.BootToFirstTest, out.Total)
}

func TestNativePanicIsACrash(t *testing.T) {
	k := bootKernel(t)
	r := newRecorder()
	job := tinyJob(t, "panic", "TestPanic")
	start := time.Now()
	out, err := native(t).Run(context.Background(), k, job, r)
	assert.Assert(t, errors.Is(err, ErrCrash), "err: %v", err)
	assert.Check(t, is.ErrorContains(err, "kernel panic during tiny0: Kernel panic - not syncing: sysrq triggered crash"))
	assert.Check(t, time.Since(start) < job.Timeouts.Boot+panicGrace+drainGrace, "took %v", time.Since(start))
	assert.Check(t, is.Contains(r.out("tiny0"), "crashing the kernel"))
	assert.Assert(t, len(r.splats) > 0)
	last := r.splats[len(r.splats)-1]
	assert.Check(t, is.Equal(last.Kind, KindPanic))
	assert.Check(t, is.Contains(strings.Join(last.Lines, "\n"), "sysrq_handle_crash"))
	assert.Check(t, is.Contains(console(out), "Kernel panic"))
}

func TestNativeHangIsKilledAtIdleTimeout(t *testing.T) {
	k := bootKernel(t)
	r := newRecorder()
	job := tinyJob(t, "hang", "TestHang")
	job.Timeouts.Idle = 5 * time.Second
	start := time.Now()
	_, err := native(t).Run(context.Background(), k, job, r)
	elapsed := time.Since(start)
	assert.Assert(t, errors.Is(err, ErrCrash), "err: %v", err)
	want := "no output for 5s during tiny0: a hang, or a silent test (raise --idle-timeout)"
	assert.Check(t, is.ErrorContains(err, want))
	assert.Check(t, is.Contains(r.out("tiny0"), "about to hang"))
	assert.Check(t, !strings.Contains(strings.Join(r.calls, "\n"), "exit tiny0"), "a killed binary has no exit code")
	assert.Check(t, elapsed < job.Timeouts.Boot+job.Timeouts.Idle+drainGrace+time.Second, "took %v", elapsed)
}

// TestNativeMillionLines guards against the virtio-console lost-wakeup
// stall: every line must arrive, in order, and nothing may hang.
func TestNativeMillionLines(t *testing.T) {
	k := bootKernel(t)
	lines := &lineCounter{}
	job := tinyJob(t, "million", "TestMillion")
	job.Timeouts.Idle = 30 * time.Second
	start := time.Now()
	out, err := native(t).Run(context.Background(), k, job, lines)
	assert.NilError(t, err, "console: %s", console(out))
	assert.Check(t, is.Equal(lines.exit, 0))
	assert.Check(t, is.Equal(lines.n, 1000000), "lines in order: %d; first out of order: %q", lines.n, lines.bad)
	t.Logf("1e6 lines (%d bytes) in %v, %v after the first test started",
		lines.bytes, time.Since(start), out.Total-out.BootToFirstTest)
}

// lineCounter is a Sink that counts the "line N" lines, in order.
type lineCounter struct {
	partial []byte
	n       int
	bytes   int
	bad     string
	exit    int
}

func (c *lineCounter) Start(Binary) {}
func (c *lineCounter) Output(_ Binary, p []byte) {
	c.bytes += len(p)
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		l := string(c.partial[:i])
		c.partial = c.partial[i+1:]
		if !strings.HasPrefix(l, "line ") {
			continue
		}
		if l == fmt.Sprintf("line %d", c.n) {
			c.n++
		} else if c.bad == "" {
			c.bad = l
		}
	}
}
func (c *lineCounter) Exit(_ Binary, code int) { c.exit = code }
func (c *lineCounter) Splat(Splat)             {}

func TestNativeAccelAuto(t *testing.T) {
	k := bootKernel(t)
	if kvmUsable() != nil {
		t.Skip("/dev/kvm cannot be opened: auto means TCG without a probe")
	}
	init, _ := guestBinaries(t)
	var warn bytes.Buffer
	n := NewNative(NativeOptions{Init: init, CacheDir: t.TempDir(), Warn: &warn})
	job := tinyJob(t, "", "TestGuest")
	job.Accel = "auto"
	r := newRecorder()
	out, err := n.Run(context.Background(), k, job, r)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(r.calls, "exit tiny0 0"))
	switch out.Accel {
	case "tcg":
		assert.Check(t, is.Equal(strings.Count(warn.String(), "\n"), 1), "one warning line: %q", warn.String())
		assert.Check(t, is.Contains(warn.String(), "using TCG"))
	case "kvm":
		assert.Check(t, is.Equal(warn.String(), ""))
	default:
		t.Fatalf("accel %q", out.Accel)
	}
	// The verdict is cached for this boot of the machine: no second probe.
	first := out.Accel
	warn.Reset()
	out, err = n.Run(context.Background(), k, job, newRecorder())
	assert.NilError(t, err)
	assert.Check(t, is.Equal(out.Accel, first))
	assert.Check(t, is.Equal(warn.String(), ""))
}

func TestNativeMissingQEMU(t *testing.T) {
	init := staticELF(t)
	n := NewNative(NativeOptions{Init: init, QEMU: "no-such-qemu-system-x86_64", CacheDir: t.TempDir()})
	k := &kernels.Kernel{Name: "k", Vmlinuz: init}
	_, err := n.Run(context.Background(), k, Job{}, newRecorder())
	assert.Check(t, is.Error(err, "no-such-qemu-system-x86_64 not found: install qemu-system-x86 (make deps)"))
}

func TestVngRunsBinary(t *testing.T) {
	k := bootKernel(t)
	if _, err := exec.LookPath("vng"); err != nil {
		t.Skip("vng (virtme-ng) not found: make deps installs it")
	}
	init, _ := guestBinaries(t)
	job := tinyJob(t, "vng", "TestGuest")
	job.Timeouts.Boot = 5 * time.Minute
	r := newRecorder()
	out, err := NewVng(VngOptions{Init: init}).Run(context.Background(), k, job, r)
	assert.NilError(t, err, "console: %s", console(out))
	assert.Check(t, is.DeepEqual(normalize(r.calls)[0], "start tiny0"))
	assert.Check(t, is.Contains(r.calls, "exit tiny0 0"))
	assert.Check(t, is.Contains(r.out("tiny0"), "hello from the guest, XMITCHECK_TINY=vng"))
	t.Logf("vng: boot to first test %v, total %v", out.BootToFirstTest, out.Total)
}

func TestHostRunsBinaries(t *testing.T) {
	if os.Geteuid() != 0 {
		_, err := Host{}.Run(context.Background(), &kernels.Kernel{Name: "host", Host: true}, Job{}, newRecorder())
		assert.Check(t, is.ErrorContains(err, "needs root"))
		return
	}
	job := tinyJob(t, "hang", "TestGuest", "TestHang")
	job.Timeouts.Idle = 2 * time.Second
	r := newRecorder()
	start := time.Now()
	_, err := Host{}.Run(context.Background(), &kernels.Kernel{Name: "host", Host: true}, job, r)
	assert.Check(t, errors.Is(err, ErrCrash), "err: %v", err)
	want := "no output for 2s while running tiny1: a hang, or a silent test (raise --idle-timeout)"
	assert.Check(t, is.ErrorContains(err, want))
	assert.Check(t, time.Since(start) < 20*time.Second, "took %v", time.Since(start))
	assert.Check(t, is.Contains(r.calls, "exit tiny0 0"))
	assert.Check(t, is.Contains(r.out("tiny0"), "XMITCHECK_TINY=hang"))
	assert.Check(t, is.Contains(r.out("tiny1"), "about to hang"))
}
