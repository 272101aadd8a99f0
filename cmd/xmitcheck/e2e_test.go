package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/kernels"
)

// tiny builds vmtest's guest test binary (its tests act only when
// XMITCHECK_TINY names them).
func tiny(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("boots debian:7.3 in qemu: not with -short")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 not found: make deps installs it")
	}
	bin := filepath.Join(t.TempDir(), "tiny.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "../../vmtest/testdata/tiny")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build tiny.test: %v\n%s", err, out)
	}
	return bin
}

// TestKernelPanicExits3 boots a kernel that panics under a test: exit code
// 3, well within the deadline, with the panic on stderr.
func TestKernelPanicExits3(t *testing.T) {
	bin := tiny(t)
	start := time.Now()
	code, stderr := xc(t, []string{"XMITCHECK_TINY=panic"}, nil,
		"exec", "--kernel", "debian:7.3", "--accel", "tcg", bin, "-test.run=^TestPanic$")
	assert.Check(t, is.Equal(code, exitCrashed), "stderr: %s", stderr)
	assert.Check(t, is.Contains(stderr, "Kernel panic"))
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	assert.Check(t, is.Contains(lines[len(lines)-1], "xmitcheck: debian:7.3"), "the last line says what happened")
	assert.Check(t, time.Since(start) < 2*time.Minute, "took %v", time.Since(start))
}

// TestHungTestExits3 runs a test that blocks forever: killed at the idle
// timeout, exit code 3.
func TestHungTestExits3(t *testing.T) {
	bin := tiny(t)
	start := time.Now()
	code, stderr := xc(t, []string{"XMITCHECK_TINY=hang"}, nil,
		"exec", "--kernel", "debian:7.3", "--accel", "tcg", "--idle-timeout", "10s", bin, "-test.run=^TestHang$")
	assert.Check(t, is.Equal(code, exitCrashed), "stderr: %s", stderr)
	assert.Check(t, is.Contains(stderr, "10s"), "the error names the timeout")
	assert.Check(t, time.Since(start) < 90*time.Second, "took %v", time.Since(start))
}

// TestGoTestExec is the Go convention: go test -exec runs a package's
// tests in the VM and passes their verdict through.
func TestGoTestExec(t *testing.T) {
	tiny(t)
	cmd := exec.Command("go", "test", "-count=1", "-v", "-exec", xmitcheck+" exec --kernel debian:7.3 --accel tcg",
		"-run", "^TestGuest$", "../../vmtest/testdata/tiny")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "XMITCHECK_TINY=exec")
	out, err := cmd.CombinedOutput()
	assert.NilError(t, err, "%s", out)
	assert.Check(t, is.Contains(string(out), "hello from the guest, XMITCHECK_TINY=exec"))
	assert.Check(t, is.Contains(string(out), "--- PASS: TestGuest"))
}

// TestHangDoesNotHideTheRest: a test binary hangs the run; the test that
// hung is named, and the binaries not yet run still run and pass: in one
// VM the kernel boots again for them, in two the other VM runs them. The
// run still exits 3.
func TestHangDoesNotHideTheRest(t *testing.T) {
	tiny(t)
	for _, vms := range []string{"1", "2"} {
		t.Run("vms="+vms, func(t *testing.T) {
			cmd := exec.Command(xmitcheck, "run", "--kernel", "debian:7.3", "--accel", "tcg", "--idle-timeout", "10s",
				"--vms", vms, "-run", "^(TestHang|TestStart)$", "./vmtest/testdata/tiny", "./internal/splat")
			cmd.Dir = filepath.Join("..", "..")
			cmd.Env = append(os.Environ(), "XMITCHECK_TINY=hang", "CGO_ENABLED=0")
			out, _ := cmd.CombinedOutput()
			assert.Check(t, is.Equal(cmd.ProcessState.ExitCode(), exitCrashed), "%s", out)
			assert.Check(t, is.Contains(string(out), "--- FAIL: debian:7.3"), "the test that hung is named")
			assert.Check(t, is.Contains(string(out), "TestHang"))
			if vms == "1" {
				assert.Check(t, is.Contains(string(out), "booting again for the 1 test binary not yet run"))
			} else {
				assert.Check(t, is.Contains(string(out), "2 VMs at once"))
			}
			assert.Check(t, is.Contains(string(out), "1 passed, 1 failed"), "internal/splat's TestStart ran")
		})
	}
}

// TestAssertionShowsItsExpression: gotest.tools reads a failed assertion's
// expression from the test's source file, which the guest must have.
func TestAssertionShowsItsExpression(t *testing.T) {
	tiny(t)
	cmd := exec.Command(xmitcheck, "run", "--kernel", "debian:7.3", "--accel", "tcg",
		"-run", "^TestAssert$", "./vmtest/testdata/tiny")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "XMITCHECK_TINY=assert", "CGO_ENABLED=0")
	out, _ := cmd.CombinedOutput()
	assert.Check(t, is.Contains(string(out), "assertion failed: answer is not 42"), "%s", out)
	assert.Check(t, !strings.Contains(string(out), "failed to parse source file"))
}

// TestKselftestInVng installs the collection and runs one suite of it as
// netdev's CI runs kselftests: the kernel's own runner in virtme-ng on
// debian:7.3, the program given the test that shows seed 004 through the
// runner's KSELFTEST_DEVMAP_ARGS. It passes, the seed is what
// kernels/expectations says (the verdict xmitcheck run gives), and the
// kernel's kunit.py parses the runner's KTAP.
func TestKselftestInVng(t *testing.T) {
	if testing.Short() {
		t.Skip("installs the collection and boots debian:7.3 in vng: not with -short")
	}
	if _, err := exec.LookPath("vng"); err != nil {
		t.Skip("vng not found: make deps installs it")
	}
	if os.Geteuid() != 0 {
		t.Skip("the suites need root")
	}
	start := time.Now()
	cache, err := kernels.DefaultCacheDir()
	assert.NilError(t, err)
	dir, err := os.MkdirTemp(cache, "kselftest-e2e-") // the guest sees the host's root, not its /tmp
	assert.NilError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	tree := filepath.Join(dir, "kst")
	install := exec.Command(xmitcheck, "suites", "install", "-o", tree, "./suites/devmap")
	install.Dir = filepath.Join("..", "..")
	out, err := install.CombinedOutput()
	assert.NilError(t, err, "%s", out)
	k, err := kernels.Resolve(context.Background(), "debian:7.3", kernels.Options{})
	assert.NilError(t, err)
	// The runner hands the program KSELFTEST_DEVMAP_ARGS: the seed's own
	// test is enough to judge it.
	runner := "KSELFTEST_DEVMAP_ARGS='-run ^TestOrdering$' " + filepath.Join(tree, "run_kselftest.sh") +
		" -t xmitcheck:devmap"
	vng := exec.Command("vng", "--run", k.Vmlinuz, "--disable-kvm", "--user", "root", "--cpus", "2", "--memory", "1024M",
		"--exec", runner)
	var stderr strings.Builder
	vng.Stderr = &stderr
	out, err = vng.Output() // a pipe: the runner appends to /dev/stdout
	assert.NilError(t, err, "%s%s", out, stderr.String())
	log := string(out)
	assert.Check(t, is.Contains(log, "\nok 1 selftests: xmitcheck: devmap\n"), log)
	assert.Check(t, is.Contains(log, "#     # 004: present (want present): "))
	assert.Check(t, is.Contains(log, "# # module veth: loaded from /lib/modules/"+k.Release+"/"))

	kunit := filepath.Join(cache, "kselftest-runner", "debian-7.3", "tools", "testing", "kunit", "kunit.py")
	logFile := filepath.Join(dir, "devmap.log")
	assert.NilError(t, os.WriteFile(logFile, out, 0o644))
	parsed, err := exec.Command("python3", kunit, "parse", logFile).CombinedOutput()
	assert.NilError(t, err, "%s", parsed)
	assert.Check(t, is.Contains(string(parsed), "Testing complete. Ran 1 tests: passed: 1"))
	t.Logf("install, vng boot, suites/devmap and the parse: %v", time.Since(start).Round(time.Second))
}
