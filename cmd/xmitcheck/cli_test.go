package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/kernels"
)

var xmitcheck string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "xmitcheck-cli-")
	if err != nil {
		panic(err)
	}
	os.Chmod(dir, 0o755)
	xmitcheck = filepath.Join(dir, "xmitcheck")
	build := exec.Command("go", "build", "-o", xmitcheck, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// xc runs xmitcheck and returns its exit code and stderr.
func xc(t *testing.T, env []string, cred *syscall.Credential, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(xmitcheck, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Dir = "/" // t.TempDir's parents are closed to other users
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run xmitcheck: %v", err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// TestBadInputOneLine checks that each kind of bad input ends with exit
// code 2 and one line that says what is wrong and what to do.
func TestBadInputOneLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"UnknownCommand", nil, []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"UnknownKernel", nil, []string{"run", "--kernel", "debian:9.9"}, `unknown kernel "debian:9.9"`},
		{"BadBackend", nil, []string{"run", "--backend", "docker"}, `--backend "docker": use native or vng`},
		{"BadFlag", nil, []string{"run", "--frob"}, "flag provided but not defined: -frob"},
		{"MissingQEMU", []string{"PATH=/nonexistent"}, []string{"run", "--kernel", "debian:7.3"},
			"qemu-system-x86_64 not found: run `make deps`"},
		{"MissingVng", []string{"PATH=/nonexistent"}, []string{"run", "--backend", "vng"}, "vng not found"},
		{"ExecNoBinary", nil, []string{"exec"}, "exec: no binary given"},
		{"CloudUnderVng", nil, []string{"run", "--backend", "vng", "--kernel", "debian:7.3-cloud"},
			"debian:7.3-cloud cannot boot under virtme-ng"},
		{"ExecExpect", nil, []string{"exec", "--expect", "003", "x.test"}, "exec: --expect is for run"},
		{"UnwritableJUnit", nil, []string{"run", "--junit", "/no/such/dir/j.xml"},
			"cannot write /no/such/dir/j.xml: no directory /no/such/dir"},
		{"UnwritableMatrix", nil, []string{"matrix", "--out", "/no/such/dir/m"}, "cannot write /no/such/dir/m"},
		{"NoGo", []string{"PATH=/nonexistent"}, []string{"suites", "build", "-o", "bins"}, "go not found"},
		{"NotACheckout", nil, []string{"suites", "build", "-o", "bins", "-C", "/"}, "-C /: no go.mod there or above"},
		{"SuitesNoOut", nil, []string{"suites", "build"}, "suites build: give -o DIR"},
		{"CostRounds", nil, []string{"run", "--cost", "--rounds", "2"}, "--rounds 2: an interval needs 3 rounds"},
		{"CostBenchtime", nil, []string{"run", "--cost", "--cost-benchtime", "1s"},
			`--cost-benchtime "1s": give a count of frames`},
		{"CompareCount", nil, []string{"compare", "--base", "debian:7.2", "--patched", "debian:7.3", "-count", "2"},
			"-count must be at least 3"},
		{"TwoStreamsOnStdout", nil, []string{"run", "--json", "--ktap", "-"},
			"--json and --ktap - both write to stdout, where one stream fits: send one to a file (e.g. --ktap FILE)"},
		{"ThreeOnStdout", nil, []string{"run", "--json", "--ktap", "-", "--junit", "-"},
			"--json, --ktap - and --junit - all write to stdout, where one stream fits: send all but one to a file"},
		{"UnknownSuite", nil, []string{"suites", "build", "-o", "bins", "./suites/nope"},
			"no package ./suites/nope: the suites are devmap, qdisc, tun and vhost in ./suites (./suites/... runs all)"},
		{"CompareMaxRegression", nil,
			[]string{"compare", "--base", "debian:7.2", "--patched", "debian:7.3", "--max-regression", "-5"},
			"--max-regression -5: give a percentage above 0"},
		{"InstallNoOut", nil, []string{"suites", "install"}, "suites install: give -o DIR"},
		{"InstallBadExpect", nil, []string{"suites", "install", "-o", "k", "--expect", "00x"}, `unknown item "00x"`},
		{"InstallShortTimeout", nil, []string{"suites", "install", "-o", "k", "--timeout", "10"},
			"--timeout 10: give at least 60 seconds"},
		{"InstallOverOtherFiles", nil, []string{"suites", "install", "-o", "/etc"},
			"-o /etc: it holds other files, and install replaces the directory: give a new or empty one"},
		{"InstallNoRunner", nil, []string{"suites", "install", "-o", "k", "--kselftest-from", "/"},
			"--kselftest-from /: no tools/testing/selftests/run_kselftest.sh there: give a kernel source tree"},
		{"LavaJobNoTree", nil, []string{"lava", "job", "-o", "j"}, "lava job: give --tree DIR"},
		{"LavaJobNotACollection", nil, []string{"lava", "job", "--tree", "/", "-o", "j"},
			"lava job --tree /: not an installed collection"},
		{"LavaResultsNoLog", nil, []string{"lava", "results", "-o", "r"}, "lava results: give one job log and -o DIR"},
		{"LavaResultsMissing", nil, []string{"lava", "results", "/no/such/log", "-o", "r"}, "/no/such/log"},
		{"LavaResultsNotALog", nil, []string{"lava", "results", "/etc/hostname", "-o", "r"},
			"is not a LAVA log entry ({dt, lvl, msg}): give the job's log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := xc(t, tc.env, nil, tc.args...)
			assert.Check(t, is.Equal(code, exitInfra))
			assert.Check(t, is.Equal(strings.Count(stderr, "\n"), 1), "stderr: %q", stderr)
			assert.Check(t, is.Contains(stderr, tc.want))
		})
	}
}

// TestBisectBadUsage: bisect's bad usage is 128, which stops git bisect run.
func TestBisectBadUsage(t *testing.T) {
	bad := [][]string{{"--tree", "/no/such/tree"}, {"--frob"}, {"--kernel", "debian:7.3"}, {"--expect", "nothing"}}
	for _, args := range bad {
		code, stderr := xc(t, nil, nil, append([]string{"bisect"}, args...)...)
		assert.Check(t, is.Equal(code, bisectAbort), "%v: %s", args, stderr)
		assert.Check(t, is.Equal(strings.Count(stderr, "\n"), 1), "stderr: %q", stderr)
	}
}

func TestHostNeedsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to drop to another user")
	}
	code, stderr := xc(t, nil, &syscall.Credential{Uid: 65534, Gid: 65534}, "run", "--kernel", "host")
	assert.Check(t, is.Equal(code, exitInfra))
	assert.Check(t, is.Contains(stderr, "--kernel host runs the suites on this machine and needs root"))
	assert.Check(t, is.Equal(strings.Count(stderr, "\n"), 1), "stderr: %q", stderr)
}

// TestHelpEverywhere: -h prints a usage line and exits 0 for every
// command and subcommand.
func TestHelpEverywhere(t *testing.T) {
	for _, args := range [][]string{
		{"run"}, {"exec"}, {"matrix"}, {"report"}, {"compare"}, {"bisect"}, {"bench"}, {"bench", "boot"},
		{"bench", "profile"}, {"version"}, {"suites"}, {"suites", "build"}, {"suites", "install"},
		{"kselftest"}, {"lava"}, {"lava", "job"}, {"lava", "results"},
		{"kernels"}, {"kernels", "fetch"}, {"kernels", "config"}, {"kernels", "source"}, {"kernels", "build"},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			cmd := exec.Command(xmitcheck, append(args, "-h")...)
			out, err := cmd.Output()
			assert.NilError(t, err)
			assert.Check(t, is.Contains(string(out), "usage: xmitcheck "+args[0]))
		})
	}
}

func TestVersion(t *testing.T) {
	out, err := exec.Command(xmitcheck, "version").Output()
	assert.NilError(t, err)
	assert.Check(t, strings.HasPrefix(string(out), "xmitcheck "))
	assert.Check(t, is.Contains(string(out), "go1."))
}

func TestHelp(t *testing.T) {
	code, _ := xc(t, nil, nil, "-h")
	assert.Equal(t, code, exitOK)
	code, stderr := xc(t, nil, nil)
	assert.Equal(t, code, exitInfra)
	assert.Check(t, is.Contains(stderr, "usage: xmitcheck COMMAND"))
}

// TestUsageNamesEveryKernel: the top-level usage names each kernel of the
// catalog, its flavours included, and stays within its width.
func TestUsageNamesEveryKernel(t *testing.T) {
	for _, e := range kernels.Catalog() {
		if e.Name != "PATH" {
			assert.Check(t, is.Regexp(`[\s]`+regexp.QuoteMeta(e.Name)+`[\s,]`, usage))
		}
	}
	for l := range strings.SplitSeq(usage, "\n") {
		assert.Check(t, len(l) <= 120, "too long: %q", l)
	}
}

// TestReportFlagsAfterFolder: report takes its flags after the folders
// too, as `report m -o x`.
func TestReportFlagsAfterFolder(t *testing.T) {
	data, err := os.ReadFile("../../internal/host/report/testdata/results.json")
	assert.NilError(t, err)
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	assert.NilError(t, os.Mkdir(m, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(m, "results.json"), data, 0o644))
	page, md := filepath.Join(dir, "x.html"), filepath.Join(dir, "x.md")
	code, stderr := xc(t, nil, nil, "report", m, "-o", page, "--markdown", md, m)
	assert.Check(t, is.Equal(code, exitOK), stderr)
	for _, f := range []string{page, md} {
		_, err := os.Stat(f)
		assert.Check(t, err, "%s", f)
	}
}

// TestMatrixHelpDefault: matrix -h names the kernels matrix runs without
// --kernel (every catalog kernel and the host), not run's one default.
func TestMatrixHelpDefault(t *testing.T) {
	out, err := exec.Command(xmitcheck, "matrix", "-h").Output()
	assert.NilError(t, err)
	assert.Check(t, !strings.Contains(string(out), "(default debian:7.3)"), "%s", out)
	assert.Check(t, is.Contains(strings.Join(strings.Fields(string(out)), " "),
		"(default: "+strings.Join(matrixKernels(), " ")+")"))
}
