package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels"
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
	fs, s := suiteFlags("matrix", "[flags] [PKG...]",
		"Run the suites (default ./suites/...) on many kernels, several at once, into one folder:\n"+
			"results.json and per kernel KTAP, JUnit and JSON.")
	// Without --kernel, matrix runs every kernel, not run's default.
	fs.Lookup("kernel").Usage = "kernel to run on, repeatable: a catalog name, build:NAME, host or a path " +
		"(default: " + strings.Join(matrixKernels(), " ") + ")"
	out := fs.String("out", "xmitcheck-matrix", "output folder (replaced)")
	check := fs.Bool("check", false, "exit 1 when a verdict differs from its expectation")
	jobs := fs.Int("j", 0, "kernels at once (0: one per core, as far as memory allows)")
	registerCost(fs, &s.Cost)
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if err := s.Cost.Check(); err != nil {
		return 0, err
	}
	if len(s.Kernels) == 0 {
		s.Kernels = matrixKernels()
	}
	start := time.Now()
	ctx, stop, ks, err := s.begin(fs, nil, output{"--out", *out})
	defer stop()
	if err != nil {
		return 0, err
	}
	if *jobs <= 0 {
		*jobs = runner.DefaultJobs(s.MemoryMB)
	}
	// The cores go to kernels at once: each kernel runs in one VM unless
	// --vms says otherwise.
	s.VMs = max(s.VMs, 1)
	runs, table, err := s.matrix(ctx, ks, *jobs, start)
	if err != nil {
		return 0, err
	}
	if err := writeMatrix(*out, ks, runs, table, s.SuitesRev); err != nil {
		return 0, err
	}
	fmt.Printf("matrix: %s (results.json, per kernel .ktap .junit.xml .json; xmitcheck report %[1]s)\n", *out)
	code := max(runExit(runs), costExit(runs))
	if !*check && code == exitFail {
		code = exitOK
	}
	return code, nil
}

// matrix runs the suites on ks, jobs at once, then each kernel's cost pass
// one at a time, and prints what each printed and the table, which it
// returns for summary.txt.
func (s *suiteRun) matrix(ctx context.Context, ks []*kernels.Kernel, jobs int, start time.Time) (
	[]*results.Run, []byte, error) {
	fetched := time.Since(start)
	bins, init, cleanup, err := s.Binaries(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer cleanup()
	fmt.Fprintf(runner.Progress(), "xmitcheck: matrix of %s, %d at once (kernels ready in %v)\n",
		results.Count(len(ks), "kernel"), min(jobs, len(ks)), fetched.Round(time.Second))
	runs, human, err := s.RunMany(ctx, ks, bins, init, jobs)
	if err != nil {
		return nil, nil, err
	}
	for _, h := range human {
		os.Stdout.Write(h.Bytes())
	}
	// Cost passes are timed: one kernel at a time, nothing beside it.
	for i, k := range ks {
		if s.Cost.On && ctx.Err() == nil {
			if err := s.CostPass(ctx, k, init, bins, runs[i], os.Stdout); err != nil {
				return nil, nil, err
			}
		}
	}
	var table bytes.Buffer
	results.WriteSummary(&table, runs)
	results.WriteVerdicts(&table, runs)
	results.WriteCosts(&table, runs)
	fmt.Fprintf(&table, "wall time %v: kernels ready in %v, then %s %d at once\n",
		time.Since(start).Round(time.Second), fetched.Round(time.Second), results.Count(len(ks), "kernel"),
		min(jobs, len(ks)))
	os.Stdout.Write(table.Bytes())
	return runs, table.Bytes(), nil
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
		files := runner.Reports{KTAP: base + ".ktap", JUnit: base + ".junit.xml", JSON: base + ".json"}
		if err := runner.WriteReports([]*results.Run{r}, files); err != nil {
			return err
		}
		sn := r.Snapshot()
		sn.Name, sn.Release = k.Name, k.Release
		if k.Package != "" {
			sn.Package = k.Package + " " + k.PackageVersion
		}
		snaps = append(snaps, matrixEntry{Snapshot: sn, Xmitcheck: runner.Version(), Suites: suitesRev})
	}
	if err := runner.WriteTo(filepath.Join(tmp, "results.json"), func(w io.Writer) error {
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

// fileKey names a kernel's files: "debian:7.3" → "debian-7.3", a path by
// its last elements, "." (the tree xmitcheck runs in) "tree".
func fileKey(name string) string {
	key := strings.NewReplacer(":", "-", "/", "_", " ", "_").Replace(strings.TrimLeft(name, "./"))
	if key == "" {
		return "tree"
	}
	return key
}
