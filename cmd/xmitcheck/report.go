package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"

	"github.com/xmitcheck/xmitcheck/internal/host/kcidb"
	"github.com/xmitcheck/xmitcheck/internal/host/report"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/internal/host/runner"
)

// cmdReport renders one or more matrix folders (their results.json) as one
// static HTML page and a Markdown reply, and prints the verdict table.
// --check fails when a verdict differs from its expectation. --kcidb writes
// a KCIDB report for KernelCI instead of the page (as well, with -o).
func cmdReport(args []string) (int, error) {
	fs := newFlags("report", "[-o FILE] [--markdown FILE] [--kcidb FILE [--origin NAME]] [--check] DIR...",
		"Render matrix folders as one static HTML page (and Markdown, KCIDB) and print the verdict table.")
	html := fs.String("o", "report.html", "the HTML page to write")
	markdown := fs.String("markdown", "", "also write the report as Markdown to this file")
	check := fs.Bool("check", false, "exit 1 when a verdict differs from its expectation")
	kcidbFile := fs.String("kcidb", "",
		"write a KCIDB report for KernelCI to this file (- for stdout); no HTML then, unless -o")
	origin := fs.String("origin", kcidb.DefaultOrigin, "the KCIDB origin: the CI system, in every id")
	// Flags may come after a folder too (report m -o x): the flag package
	// stops at the first argument that is not one, so parse again after it.
	var dirs []string
	for rest := args; ; rest = fs.Args()[1:] {
		if err := parse(fs, rest); err != nil {
			return 0, err
		}
		if fs.NArg() == 0 {
			break
		}
		dirs = append(dirs, fs.Arg(0))
	}
	// The page is what report is for, unless --kcidb is asked for alone.
	htmlToo := *kcidbFile == ""
	fs.Visit(func(f *flag.Flag) { htmlToo = htmlToo || f.Name == "o" })
	if len(dirs) == 0 {
		return 0, usagef("report: name the matrix folder(s) to render (xmitcheck matrix --out DIR writes one)")
	}
	for _, f := range []string{*markdown, *kcidbFile} {
		if err := writable(f); err != nil {
			return 0, err
		}
	}
	if err := kcidb.CheckOrigin(*origin); err != nil {
		return 0, usagef("report: --%v", err)
	}
	snaps, err := loadSnapshots(dirs)
	if err != nil {
		return 0, err
	}
	if err := writeReportFiles(snaps, reportFiles{*html, *markdown, *kcidbFile, *origin, htmlToo}); err != nil {
		return 0, err
	}
	table := io.Writer(os.Stdout)
	if *kcidbFile == "-" {
		table = os.Stderr // stdout is the KCIDB report's
	}
	if err := report.WriteMarkdown(table, snaps); err != nil {
		return 0, err
	}
	if *check && mismatched(snaps) {
		return exitFail, nil
	}
	return exitOK, nil
}

// loadSnapshots reads the matrix folders' results.json, in order.
func loadSnapshots(dirs []string) ([]results.Snapshot, error) {
	var snaps []results.Snapshot
	for _, dir := range dirs {
		s, err := report.Load(dir)
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, s...)
	}
	return snaps, nil
}

// reportFiles are the files report writes ("" for none): the page when
// htmlToo, the Markdown reply, the KCIDB report for origin.
type reportFiles struct {
	html, markdown, kcidb, origin string
	htmlToo                       bool
}

func writeReportFiles(snaps []results.Snapshot, f reportFiles) error {
	if f.kcidb != "" {
		if err := runner.WriteTo(f.kcidb, func(w io.Writer) error { return kcidb.Write(w, snaps, f.origin) }); err != nil {
			return err
		}
	}
	if f.htmlToo {
		if err := os.MkdirAll(filepath.Dir(f.html), 0o755); err != nil {
			return err
		}
		if err := runner.WriteTo(f.html, func(w io.Writer) error { return report.WriteHTML(w, snaps) }); err != nil {
			return err
		}
	}
	if f.markdown != "" {
		return runner.WriteTo(f.markdown, func(w io.Writer) error { return report.WriteMarkdown(w, snaps) })
	}
	return nil
}

// mismatched reports whether a verdict differs from its expectation, a
// feature was missed or a run failed to finish.
func mismatched(snaps []results.Snapshot) bool {
	for _, s := range snaps {
		for _, v := range s.Verdicts {
			if v.Mismatch() {
				return true
			}
		}
		if len(s.Misses) > 0 || s.Err != "" {
			return true
		}
	}
	return false
}
