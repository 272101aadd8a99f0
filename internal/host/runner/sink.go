package runner

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/heartbeat"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// resultSink turns a backend's raw stream into results: each binary's
// -test.v=test2json output goes through a results.Converter, every event is
// recorded in the kernel's Run, and kernel splats fail the test (or else the
// binary) that was running.
type resultSink struct {
	run     *results.Run
	kernel  string    // the label, "debian:7.3 (7.3.4-1~bpo13+1)"
	verbose io.Writer // nil unless -v: the tests' raw output
	// test2json is the test2json program ("": go tool test2json).
	test2json string

	// mu guards run, running and begun against the converter goroutine,
	// the console watcher and the heartbeat.
	mu   sync.Mutex
	conv *results.Converter
	err  error

	// running is the binary that started and has not exited; begun says
	// whether this boot started one; exited are those that did, on any
	// boot; splats are this boot's kernel reports.
	running string
	begun   bool
	exited  map[string]bool
	splats  []vmtest.Splat

	// progress gets a line per finished binary and a heartbeat; started
	// is when the kernel's run began.
	progress io.Writer
	started  time.Time
}

// heartbeat says every period which test runs, so a long run shows life
// where there is no terminal. The returned func stops it.
func (s *resultSink) heartbeat(period time.Duration) (stop func()) {
	return heartbeat.Start(period, func(time.Duration) {
		fmt.Fprintf(s.progress, "xmitcheck: %s: %v, %s\n", s.kernel, time.Since(s.started).Round(time.Second), s.activity())
	})
}

// activity says what the guest is doing, for the heartbeat.
func (s *resultSink) activity() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch rt := s.run.Running(); {
	case rt != nil:
		return "running " + results.ShortPackage(rt.Package) + " " + rt.Name
	case s.running != "":
		return "running " + results.ShortPackage(s.running) + ", between tests"
	case s.begun:
		return "between test binaries"
	}
	return "booting"
}

// newBoot forgets the last boot's binary and reports before the next.
func (s *resultSink) newBoot() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running, s.begun, s.splats = "", false, nil
}

func (s *resultSink) Start(b vmtest.Binary) {
	s.mu.Lock()
	s.running, s.begun = b.Name, true
	s.mu.Unlock()
	c, err := results.StartConverterWith(s.test2json, b.Name, s.add)
	if err != nil {
		s.err = err
		return
	}
	s.conv = c
}

// endBoot ends a binary the kernel died under: its converter flushes what
// the binary printed.
func (s *resultSink) endBoot() {
	if s.conv != nil {
		s.conv.End()
		s.conv = nil
	}
}

func (s *resultSink) Output(b vmtest.Binary, p []byte) {
	if s.verbose != nil {
		s.verbose.Write(printable(p))
	}
	if s.conv != nil {
		s.conv.Write(p)
	}
}

func (s *resultSink) Exit(b vmtest.Binary, code int) {
	s.mu.Lock()
	s.running = ""
	s.mu.Unlock()
	if s.exited == nil {
		s.exited = map[string]bool{}
	}
	s.exited[b.Name] = true
	if s.conv == nil {
		return
	}
	verdict := s.conv.End()
	s.conv = nil
	if s.progress != nil {
		fmt.Fprintf(s.progress, "xmitcheck: %s: %s %s (exit %d) at %v\n", s.kernel, results.ShortPackage(b.Name),
			cmp.Or(verdict, "ended"), code, time.Since(s.started).Round(time.Second))
	}
	switch {
	case code != 0 && verdict != "fail":
		// The binary failed without saying so (a panic, a kill, a leak
		// found after the tests passed): its package fails.
		s.add(results.Event{Action: "fail", Package: b.Name, Output: fmt.Sprintf("exit status %d", code)})
	case code == 0 && verdict == "":
		// It ran no test and said nothing of them (-list prints names
		// only; testmain with -short returns at once): it passed, as go
		// test -json reports a binary that exits 0 without a word.
		s.add(results.Event{Action: "pass", Package: b.Name})
	}
}

func (s *resultSink) Splat(sp vmtest.Splat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.splats = append(s.splats, sp)
	if sp.Binary != "" {
		// Where the kernel log's marks put it, not where the events,
		// which lag the console, had got to.
		s.run.AttachKernelAt(sp.Binary, sp.Test, sp.Kind, sp.Where(), sp.Lines)
	} else {
		s.run.AttachKernel(s.running, sp.Kind, sp.Lines)
	}
	if s.verbose != nil {
		for _, l := range sp.Lines {
			fmt.Fprintln(s.verbose, "kernel:", l)
		}
	}
}

func (s *resultSink) add(e results.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.Kernel = s.kernel
	s.run.Add(e)
}

// attachConsole fails what the kernel died under (the running test, else
// the binary pkg) with the console's last lines.
func (s *resultSink) attachConsole(pkg string, out *vmtest.Outcome, err error) {
	if out == nil || len(out.Console) == 0 {
		return
	}
	// What ended the boot leads, so a verdict names it; the firmware's
	// output before the kernel's first line says nothing.
	lines := out.Console
	if i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "[") }); i > 0 {
		lines = lines[i:]
	}
	what := strings.TrimPrefix(err.Error(), "kernel ") // AttachKernel says "kernel" first
	s.run.AttachKernel(pkg, what+"; the console at the end", lines)
}

// printable drops control bytes other than newline and tab (test2json's
// framing bytes, a guest's stray escapes), so -v output stays text.
func printable(p []byte) []byte {
	return bytes.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, p)
}
