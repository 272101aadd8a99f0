package vmtest

import (
	"regexp"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/splat"
)

// Splat kinds, as internal/splat names them.
const (
	KindWarning  = splat.Warning
	KindBUG      = splat.BUG
	KindKASAN    = splat.KASAN
	KindKCSAN    = splat.KCSAN
	KindKmemleak = splat.Kmemleak
	KindUBSAN    = splat.UBSAN
	KindLockdep  = splat.Lockdep
	KindPanic    = splat.Panic
	KindRCUStall = splat.RCUStall
	KindHungTask = splat.HungTask
)

// maxSplatLines bounds one report; longer ones are cut.
const maxSplatLines = 200

// printkPrefix is the timestamp (and, with CONFIG_PRINTK_CALLER, the
// caller) the kernel puts before each console line, and whatever shares the
// line before it: the firmware's last words, with no newline, before the
// kernel's first.
var printkPrefix = regexp.MustCompile(`^.*?\[\s*\d+\.\d+\](\[\s*[TC]\d+\])?\s?`)

// continuations are trigger lines that belong to the report already open:
// the oops line after "BUG: unable to handle ...".
var continuations = regexp.MustCompile(`^(Oops: |general protection fault)`)

// ends close the open report, the line included: a WARN/BUG/oops trace
// ends with "---[ end trace", a panic with "---[ end Kernel panic", and
// KASAN/KCSAN/UBSAN reports with a rule of "=" (a KCSAN report opens with
// one too, before its first line).
var (
	endTrace = regexp.MustCompile(`^---\[ end (trace|Kernel panic)`)
	endRule  = regexp.MustCompile(`^={20,}$`)
)

// splatScanner finds kernel reports in console lines, and says where each
// started by the marks of binaries and tests among the lines.
type splatScanner struct {
	open *Splat
	// panicked is set once a panic report started.
	panicked bool
	// bin is the binary that runs or ran last, exited whether it ended;
	// tests are the test windows open in it, innermost last.
	bin    string
	exited bool
	tests  []string
}

// mark follows one mark of the kernel log.
func (s *splatScanner) mark(kind feature.MarkKind, name string) {
	switch kind {
	case feature.BinaryStart:
		s.bin, s.exited, s.tests = name, false, nil
	case feature.BinaryExit:
		if name == s.bin {
			s.exited, s.tests = true, nil
		}
	case feature.TestStart:
		s.tests = append(s.tests, name)
	case feature.TestEnd:
		if i := slices.Index(s.tests, name); i >= 0 {
			s.tests = s.tests[:i]
		}
	}
}

// Line scans one console line and returns the reports it completed.
func (s *splatScanner) Line(line string) []Splat {
	line = strings.TrimRight(line, "\r\n")
	body := printkPrefix.ReplaceAllString(line, "")
	if kind, name, ok := feature.ParseMark(body); ok {
		// Another CPU's line: an open report goes on after it.
		s.mark(kind, name)
		return nil
	}
	var done []Splat
	if s.open != nil {
		switch {
		case continuations.MatchString(body):
			s.open.Lines = append(s.open.Lines, line)
			return nil
		case endTrace.MatchString(body),
			endRule.MatchString(body) && slices.Contains([]string{KindKASAN, KindKCSAN, KindUBSAN}, s.open.Kind):
			s.open.Lines = append(s.open.Lines, line)
			return s.Flush()
		case strings.HasPrefix(body, "xmitcheck guest:"):
			return s.Flush()
		}
	}
	if kind := splat.Start(body); kind != "" {
		done = s.Flush()
		s.open = &Splat{Kind: kind, Lines: []string{line}, Binary: s.bin, Exited: s.exited}
		if len(s.tests) > 0 {
			s.open.Test = s.tests[len(s.tests)-1]
		}
		if kind == KindPanic {
			s.panicked = true
		}
		return done
	}
	if s.open != nil {
		s.open.Lines = append(s.open.Lines, line)
		if len(s.open.Lines) >= maxSplatLines {
			return s.Flush()
		}
	}
	return nil
}

// Flush closes the open report, if any: at the end of the console, or
// when the console went quiet in the middle of one.
func (s *splatScanner) Flush() []Splat {
	if s.open == nil {
		return nil
	}
	sp := *s.open
	s.open = nil
	return []Splat{sp}
}

// Open tells whether a report is being collected.
func (s *splatScanner) Open() bool { return s.open != nil }
