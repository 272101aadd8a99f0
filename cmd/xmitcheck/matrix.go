package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
	"golang.org/x/sys/unix"
)

// matrixKernels is what matrix runs on when no --kernel is given: every
// Debian kernel of the catalog, flavours included, and the machine's own.
func matrixKernels() []string {
	var out []string
	for _, e := range kernels.Catalog() {
		if e.Suite != "" {
			out = append(out, e.Name)
		}
	}
	return append(out, "host")
}

// cmdMatrix runs the suites on many kernels, several VMs at once, prints
// the verdict table and writes one folder (writeMatrix). --check fails the
// run when a cell differs from its expectation.
func cmdMatrix(args []string) (int, error) {
	fs := newFlags("matrix", "[flags] [PKG...]",
		"Run the suites (default ./suites/...) on many kernels, several at once, into one folder:\n"+
			"results.json and per kernel KTAP, JUnit and JSON.")
	var s suiteRun
	s.register(fs)
	// Without --kernel, matrix runs every kernel, not run's default.
	fs.Lookup("kernel").Usage = "kernel to run on, repeatable: a catalog name, build:NAME, host or a path " +
		"(default: " + strings.Join(matrixKernels(), " ") + ")"
	out := fs.String("out", "xmitcheck-matrix", "output folder (replaced)")
	check := fs.Bool("check", false, "exit 1 when a verdict differs from its expectation")
	jobs := fs.Int("j", 0, "kernels at once (0: one per core, as far as memory allows)")
	s.cost.register(fs)
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if err := s.cost.check(); err != nil {
		return 0, err
	}
	if len(s.v.kernels) == 0 {
		s.v.kernels = matrixKernels()
	}
	if err := s.v.check(); err != nil {
		return 0, err
	}
	if err := s.checkOutputs(output{"--out", *out}); err != nil {
		return 0, err
	}
	s.parseArgs(fs)
	if *jobs <= 0 {
		*jobs = defaultJobs(s.v.memoryMB)
	}
	// The cores go to kernels at once: each kernel runs in one VM unless
	// --vms says otherwise.
	s.v.vms = max(s.v.vms, 1)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	ks, err := s.v.resolve(ctx)
	if err != nil {
		return 0, err
	}
	fetched := time.Since(start)
	bins, init, cleanup, err := s.binaries(ctx)
	if err != nil {
		return 0, err
	}
	defer cleanup()

	fmt.Fprintf(progress(), "xmitcheck: matrix of %s, %d at once (kernels ready in %v)\n",
		results.Count(len(ks), "kernel"), min(*jobs, len(ks)), fetched.Round(time.Second))
	runs, human, err := s.runMany(ctx, ks, bins, init, *jobs)
	if err != nil {
		return 0, err
	}
	for _, h := range human {
		os.Stdout.Write(h.Bytes())
	}
	// Cost passes are timed: one kernel at a time, nothing beside it.
	for i, k := range ks {
		if s.cost.on && ctx.Err() == nil {
			if err := s.costPass(ctx, k, init, bins, runs[i], os.Stdout); err != nil {
				return 0, err
			}
		}
	}
	var table bytes.Buffer
	results.WriteSummary(&table, runs)
	results.WriteVerdicts(&table, runs)
	results.WriteCosts(&table, runs)
	fmt.Fprintf(&table, "wall time %v: kernels ready in %v, then %s %d at once\n",
		time.Since(start).Round(time.Second), fetched.Round(time.Second), results.Count(len(ks), "kernel"),
		min(*jobs, len(ks)))
	os.Stdout.Write(table.Bytes())
	if err := writeMatrix(*out, ks, runs, table.Bytes(), s.v.suitesRev); err != nil {
		return 0, err
	}
	fmt.Printf("matrix: %s (results.json, per kernel .ktap .junit.xml .json; xmitcheck report %[1]s)\n", *out)

	code := max(runExit(runs), costExit(runs))
	if !*check && code == exitFail {
		code = exitOK
	}
	return code, nil
}

// runMany runs the binaries on every kernel, jobs at once, and returns
// each kernel's run and what it printed.
func (s *suiteRun) runMany(
	ctx context.Context, ks []*kernels.Kernel, bins []vmtest.Binary, init string, jobs int,
) ([]*results.Run, []bytes.Buffer, error) {
	runs := make([]*results.Run, len(ks))
	errs := make([]error, len(ks))
	human := make([]bytes.Buffer, len(ks))
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i, k := range ks {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			runs[i], errs[i] = runOne(ctx, &s.v, k, s.v.newBackend(k, init), bins, false, &human[i])
			if runs[i] != nil {
				fmt.Fprintf(progress(), "xmitcheck: %s done: %v\n", k.Label(), runs[i].Counts())
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", ks[i].Label(), err)
		}
	}
	return runs, human, nil
}

// matrixEntry is one kernel's entry of results.json: its snapshot, and
// which xmitcheck and which suites' source gave it.
type matrixEntry struct {
	results.Snapshot
	Xmitcheck, Suites string
}

// writeMatrix writes the matrix folder out: results.json (every kernel's
// snapshot, what `report` reads), summary.txt, and per kernel its KTAP,
// JUnit and JSON. It is written beside out and renamed over it, so out is
// never half-written.
func writeMatrix(out string, ks []*kernels.Kernel, runs []*results.Run, summary []byte, suitesRev string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(out)), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return fmt.Errorf("output folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	var snaps []matrixEntry
	for i, r := range runs {
		k := ks[i]
		base := filepath.Join(tmp, fileKey(k.Name))
		files := reports{ktap: base + ".ktap", junit: base + ".junit.xml", json: base + ".json"}
		if err := writeReports([]*results.Run{r}, files); err != nil {
			return err
		}
		sn := r.Snapshot()
		sn.Name, sn.Release = k.Name, k.Release
		if k.Package != "" {
			sn.Package = k.Package + " " + k.PackageVersion
		}
		snaps = append(snaps, matrixEntry{Snapshot: sn, Xmitcheck: version(), Suites: suitesRev})
	}
	if err := writeTo(filepath.Join(tmp, "results.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(snaps)
	}); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "summary.txt"), summary, 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// defaultJobs is how many kernels run at once: one per core, as far as
// memory holds a guest and as much again for the host, at least one. A TCG
// guest leaves much of its cores idle (waiting on its timers and on the
// host's I/O): on this 2-core machine two at once took the six default
// kernels from 7 min to 4 min 6 s, every verdict the same.
func defaultJobs(memoryMB int) int {
	n := runtime.NumCPU()
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		free := int(uint64(si.Freeram) * uint64(si.Unit) >> 20)
		n = min(n, free/(2*max(memoryMB, 1024)))
	}
	return max(n, 1)
}

// fileKey names a kernel's files: "debian:7.3" → "debian-7.3", a path by
// its last elements, "." (the tree xmitcheck runs in) "tree".
func fileKey(name string) string {
	key := strings.NewReplacer(":", "-", "/", "_", " ", "_").Replace(strings.TrimLeft(name, "./"))
	if key == "" {
		return "tree"
	}
	return key
}
