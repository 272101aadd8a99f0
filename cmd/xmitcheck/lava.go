package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	tree "github.com/xmitcheck/xmitcheck"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
	"github.com/xmitcheck/xmitcheck/internal/host/ksft"
	"github.com/xmitcheck/xmitcheck/internal/host/lava"
	"github.com/xmitcheck/xmitcheck/internal/host/report"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels"
)

const lavaAbout = `The kselftest collection in a LAVA lab (docs/kselftest.md):
  xmitcheck lava job --kernel K --tree DIR -o JOBDIR   a job for LAVA's qemu device type: its
                                                      definition, ramdisk, overlays, device dictionary
  xmitcheck lava results LOG -o DIR                   the job's log read back: a folder that
                                                      xmitcheck report renders (HTML, KCIDB)
scripts/lava.sh runs both around LAVA's own lava-run.`

// cmdLava is `xmitcheck lava job|results`.
func cmdLava(args []string) (int, error) {
	if len(args) > 0 {
		switch args[0] {
		case "job":
			return exitOK, cmdLavaJob(args[1:])
		case "results":
			return cmdLavaResults(args[1:])
		}
	}
	if err := usageOnly("lava", "job|results ...", lavaAbout, args); err != nil {
		return 0, err
	}
	return 0, usagef("lava: use lava job or lava results (xmitcheck lava -h)")
}

func cmdLavaJob(args []string) error {
	fs := newFlags("lava job", "--kernel K --tree DIR -o JOBDIR [flags]",
		"Write a LAVA job that runs the installed collection DIR on kernel K in LAVA's qemu device type:\n"+
			"JOBDIR/job.yaml, the kernel, a busybox ramdisk, the collection and the modules the suites need\n"+
			"as overlays, and device.jinja2, the device dictionary of a local lava-run.")
	kernel := fs.String("kernel", kernels.DefaultKernel, "the kernel: a catalog name, build:NAME or a path (--modules)")
	modules := fs.String("modules", "", "modules directory (lib/modules/V) of a kernel given as a bzImage path")
	dir := fs.String("tree", "", "the installed collection (xmitcheck suites install -o DIR)")
	out := fs.String("o", "", "the job's directory (replaced)")
	busybox := fs.String("busybox", "/bin/busybox", "a static busybox for the ramdisk (Debian's busybox-static)")
	spec := fs.String("expect", "", "an expectation over the collection's (XMITCHECK_EXPECT in the test definition)")
	cpus := fs.Int("cpus", 2, "guest vCPUs")
	memory := fs.Int("memory", 1024, "guest memory in MiB")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkLavaJob(fs, *out, *dir, *spec, *cpus, *memory); err != nil {
		return err
	}
	t := ksft.Tree{Root: *dir}
	suites, err := t.Suites()
	if err != nil {
		return usagef("lava job --tree %s: %v", *dir, err)
	}
	if err := writable(filepath.Clean(*out)); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	k, err := kernels.Resolve(ctx, *kernel, kernels.Options{Modules: *modules, Progress: runner.Progress()})
	if err != nil {
		return err
	}
	if k.Host {
		return usagef("lava job --kernel host: a job boots a kernel image: give a catalog name, build:NAME or a path")
	}
	testdef, err := tree.Source.ReadFile("lava/xmitcheck-kselftest.yaml")
	if err != nil {
		return err
	}
	final, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	j := lava.Job{Kernel: k, Catalog: isCatalog(k.Name), Dir: final, TestDef: testdef, Suites: suites,
		Timeout: max(t.SettingsTimeout(), ksft.Timeout), Expect: *spec, CPUs: *cpus, MemoryMB: *memory}
	held, err := writeJob(final, j, t, suites, *busybox)
	if err != nil {
		return err
	}
	fmt.Printf("lava job: %s (%s, the collection of %s, modules %v)\n", filepath.Join(final, lava.JobFile), k.Label(),
		*dir, held)
	fmt.Printf("run it with LAVA's dispatcher: scripts/lava.sh renders %s and runs lava-run (docs/kselftest.md)\n",
		lava.DeviceFile)
	return nil
}

// checkLavaJob refuses a lava job without its directories, with words
// after the flags, a guest too small or an expectation that does not parse.
func checkLavaJob(fs *flag.FlagSet, out, dir, spec string, cpus, memory int) error {
	switch {
	case out == "" || dir == "":
		return usagef("lava job: give --tree DIR (xmitcheck suites install -o DIR) and -o JOBDIR")
	case fs.NArg() > 0:
		return usagef("lava job: unexpected %q: the flags say it all", fs.Arg(0))
	case cpus < 1 || memory < 256:
		return usagef("lava job: --cpus at least 1, --memory at least 256")
	}
	if _, err := expect.Parse(spec); err != nil {
		return usagef("lava job --expect: %v", err)
	}
	return nil
}

// writeJob writes the job's directory, beside final and renamed over it:
// the kernel, the ramdisk, the overlays, the definition and the device
// dictionary. It returns the modules the modules overlay holds.
func writeJob(final string, j lava.Job, t ksft.Tree, suites []string, busybox string) ([]string, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(final), "."+filepath.Base(final)+".tmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := copyExecutable(j.Kernel.Vmlinuz, filepath.Join(tmp, filepath.Base(j.Kernel.Vmlinuz))); err != nil {
		return nil, err
	}
	var names []string
	for _, s := range suites {
		for _, m := range kernels.SuiteModules[s] {
			if !slices.Contains(names, m) {
				names = append(names, m)
			}
		}
	}
	var held []string
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{lava.RamdiskFile, func(w io.Writer) error { return lava.WriteRamdisk(w, busybox) }},
		{lava.CollectionTar, func(w io.Writer) error { return lava.WriteTreeTar(w, t.Root) }},
		{lava.ModulesTar, func(w io.Writer) (err error) { held, err = lava.WriteModulesTar(w, j.Kernel, names); return err }},
		{lava.DeviceFile, func(w io.Writer) error { _, err := io.WriteString(w, lava.DeviceDictionary()); return err }},
	}
	for _, f := range files {
		if err := runner.WriteTo(filepath.Join(tmp, f.name), f.write); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	j.Modules = len(held) > 0
	if !j.Modules {
		os.Remove(filepath.Join(tmp, lava.ModulesTar))
	}
	def, err := j.Definition()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, lava.JobFile), def, 0o644); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(final); err != nil {
		return nil, err
	}
	return held, os.Rename(tmp, final)
}

// isCatalog reports whether name is a catalog kernel's.
func isCatalog(name string) bool {
	for _, e := range kernels.Catalog() {
		if e.Name == name && e.Suite != "" {
			return true
		}
	}
	return false
}

func cmdLavaResults(args []string) (int, error) {
	fs := newFlags("lava results", "LOG -o DIR [--check]",
		"Read a LAVA job's log (lava-run's output, or the job's log a LAVA server keeps) back as the\n"+
			"kernel's results: DIR/results.json, which xmitcheck report renders as HTML, Markdown and KCIDB;\n"+
			"the verdict table on stdout.")
	out := fs.String("o", "", "the folder to write its results.json into (created)")
	check := fs.Bool("check", false, "exit 1 when a verdict differs from its expectation, or the run did not finish")
	var logs []string
	for rest := args; ; rest = fs.Args()[1:] {
		if err := parse(fs, rest); err != nil {
			return 0, err
		}
		if fs.NArg() == 0 {
			break
		}
		logs = append(logs, fs.Arg(0))
	}
	if len(logs) != 1 || *out == "" {
		return 0, usagef("lava results: give one job log and -o DIR (xmitcheck lava results -h)")
	}
	if err := writable(filepath.Clean(*out)); err != nil {
		return 0, err
	}
	f, err := os.Open(logs[0])
	if err != nil {
		return 0, usagef("lava results: %v", err)
	}
	defer f.Close()
	snap, err := lava.Read(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", logs[0], err)
	}
	entry := matrixEntry{Snapshot: snap, Xmitcheck: runner.Version(), Suites: "the LAVA job log " + logs[0]}
	if err := writeSnapshots(*out, []matrixEntry{entry}); err != nil {
		return 0, err
	}
	if err := report.WriteMarkdown(os.Stdout, []results.Snapshot{snap}); err != nil {
		return 0, err
	}
	fmt.Printf("lava results: %s (xmitcheck report -o report.html --kcidb kcidb.json %[1]s)\n", *out)
	mismatch := snap.Err != "" || len(snap.Misses) > 0
	for _, v := range snap.Verdicts {
		mismatch = mismatch || v.Mismatch()
	}
	if *check && mismatch {
		return exitFail, nil
	}
	return exitOK, nil
}

// writeSnapshots writes a folder that report reads: results.json.
func writeSnapshots(out string, entries []matrixEntry) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return runner.WriteTo(filepath.Join(out, "results.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(entries)
	})
}
