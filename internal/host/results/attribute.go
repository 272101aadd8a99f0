package results

import (
	"cmp"
	"regexp"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/splat"
)

// seedCode is the code each seed's patch changed, as a kernel report names
// it: the source file of a WARNING, or a function (an entry ending in "*"
// is a prefix) at its RIP or in the first frames of its call trace. It is
// the one table the judge attributes kernel reports by.
var seedCode = []struct {
	seed  feature.Seed
	files []string
	funcs []string
}{
	{feature.Seed000Tun, []string{"drivers/net/tun.c"}, []string{"tun_*", "__tun_*"}},
	{feature.Seed000Vhost, []string{"drivers/vhost/net.c"}, []string{"vhost_net_*", "handle_tx*", "handle_rx*"}},
	{feature.Seed003, nil, []string{"__netif_schedule", "__netif_reschedule", "__qdisc_run", "qdisc_run",
		"qdisc_restart", "sch_direct_xmit", "net_tx_action", "__dev_xmit_skb"}},
	{feature.Seed004, []string{"kernel/bpf/devmap.c"}, []string{"dev_map_*", "bq_xmit_all", "bq_enqueue",
		"__dev_flush", "dev_map_bpf_prog_run*"}},
}

// traceFrames is how many frames of a stack, from the innermost, name the
// code a report is about: beyond them the callers are the syscall or
// softirq that led there, which every seed shares. A report with several
// stacks (a KCSAN race's two accesses, a KASAN report's access,
// allocation and free, a kmemleak object's allocation) gets as many from
// each.
const traceFrames = 4

var (
	// "WARNING: CPU: 0 PID: 1 at drivers/net/tun.c:1029 tun_net_close+0x8b/0xa0 [tun]", or
	// since 6.18 "WARNING: drivers/net/tun.c:1029 at tun_net_close+0x8b/0xa0 [tun], CPU#0: ip/9".
	warnAt = regexp.MustCompile(`WARNING: (?:CPU: \d+ PID: \d+ at )?(\S+?):\d+ (?:at )?([\w.]+)\+0x`)
	ripAt  = regexp.MustCompile(`RIP: \d+:([\w.]+)\+0x`)
	// A sanitizer's first line names the code: "BUG: KCSAN: data-race in
	// __tun_wake_queue / tun_net_xmit" (the two accesses' functions),
	// "BUG: KASAN: slab-use-after-free in tun_do_read+0x5d/0x320".
	sanitizerAt = regexp.MustCompile(`^BUG: K[AC]SAN: .+? in ([\w.]+)(?:\+0x[0-9a-f]+/0x[0-9a-f]+)?(?: \[\w+\])?` +
		`(?: / ([\w.]+)(?: \[\w+\])?)?\s*$`)
	// stackStart opens a stack: an oops's call trace, one access of a
	// KCSAN race ("write (reordered) to 0x… of 8 bytes by task 91 on cpu
	// 1:"), KASAN's allocation and free, kmemleak's backtrace.
	stackStart = regexp.MustCompile(`^\s*Call Trace:|^(race at unknown origin, with )?[\w -]+( \([\w, ]+\))? ` +
		`to 0x[0-9a-f]+ of \d+ bytes by .+ on cpu \d+:$|^(Allocated|Freed) by task \d+|^\s*backtrace( \(crc \w+\))?:`)
	// reorderedTo is where KCSAN's weak-memory model delayed an access
	// to: code in the function that lacked the barrier.
	reorderedTo = regexp.MustCompile(`\+-> reordered to: ([\w.]+)\+0x`)
	frameAt     = regexp.MustCompile(`^\s*(\?\s+)?(?:\[<[0-9a-f]+>\]\s*)?([\w.]+)\+0x[0-9a-f]+/0x[0-9a-f]+`)
	// printkTime is the console's "[   12.345678] " and a caller id.
	printkTime = regexp.MustCompile(`^\s*\[\s*\d+\.\d+\]\s*(\[\s*[TC]\d+\]\s*)?`)
	// machinery are the frames a report adds above the code it is about:
	// a warning's or oops's, a sanitizer's own, and the allocator's in an
	// allocation stack (a leak is the allocating code's).
	machinery = []string{"dump_stack*", "__warn*", "warn_slowpath*", "report_bug", "handle_bug",
		"exc_invalid_op", "asm_exc_invalid_op", "show_stack", "__dump_stack", "panic", "die", "do_trap*",
		"kasan_*", "__kasan_*", "__asan_*", "print_report", "print_address_description*", "kcsan_*", "__tsan_*",
		"kmemleak_*", "stack_trace_save*", "kmalloc*", "__kmalloc*", "kmem_cache_alloc*", "kzalloc*", "kvmalloc*",
		"__kvmalloc*", "krealloc*", "kmemdup*", "slab_post_alloc_hook", "__do_kmalloc*", "__slab_alloc*",
		"___slab_alloc*", "slab_alloc*", "pcpu_alloc*", "__alloc_percpu*", "alloc_pages*", "__alloc_pages*",
		"vmalloc*", "__vmalloc*", "kmalloc_reserve", "__alloc_skb", "alloc_skb*", "__netdev_alloc_skb*"}
)

// attribution is what the reports attached to a test name: the seeds whose
// code they came from, in order, and whether any named no seed's code.
type attribution struct {
	seeds []feature.Seed
	// why is, per seed, the report's first line and the code it named.
	why map[feature.Seed]string
	// unnamed is set when a report named no seed's code.
	unnamed bool
}

// names reports whether the reports named s's code.
func (a attribution) names(s feature.Seed) bool { return slices.Contains(a.seeds, s) }

// attribute reads the reports in lines, a test's Kernel: each starts with
// a "kernel KIND…:" head that AttachKernel wrote.
func attribute(lines []string) attribution {
	a := attribution{why: map[feature.Seed]string{}}
	var report []string
	flush := func() {
		if len(report) == 0 {
			return
		}
		s, code := reportSeed(report)
		switch {
		case s == "":
			a.unnamed = true
		case !a.names(s):
			a.seeds = append(a.seeds, s)
			first := report[0]
			if title := reportTitle(report); title != first {
				first += " " + title
			}
			a.why[s] = first + " (" + code + ")"
		}
		report = nil
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "kernel ") && strings.HasSuffix(l, ":") {
			flush()
		}
		report = append(report, l)
	}
	flush()
	return a
}

// pastSanitizers returns a report (headed "kernel KIND…:") that is not a
// sanitizer's (a crash, a hang with the console's last lines) without the sanitizer reports its
// lines hold: everything up to the last rule of "=" that closes one. Each
// of those reached the test as a report of its own and is judged (or
// noted) as one; the console's tail, which may start inside one, must not
// pin a hang on the code of a race reported before it.
func pastSanitizers(report []string) []string {
	if len(report) == 0 || !strings.HasPrefix(report[0], "kernel ") || splat.Sanitizer(reportKind(report[0])) {
		return report
	}
	last := -1
	for i, l := range report {
		if endRule.MatchString(strings.TrimSpace(printkTime.ReplaceAllString(l, ""))) {
			last = i
		}
	}
	if last < 0 {
		return report
	}
	return append(report[:1:1], report[last+1:]...)
}

// reportSeed returns the seed whose code one report names, and that code
// ("drivers/net/tun.c", "tun_net_close"): the WARNING's file, then the
// functions its first line names (a WARNING's, a sanitizer's), the
// function at RIP, where KCSAN reordered an access to, then the first
// traceFrames frames of each of its stacks that are not a report's own
// machinery; "" when none is a seed's.
func reportSeed(report []string) (feature.Seed, string) {
	report = pastSanitizers(report)
	var file string
	var funcs []string
	inTrace, frames := false, 0
	for _, l := range report {
		body := printkTime.ReplaceAllString(l, "")
		if m := warnAt.FindStringSubmatch(body); m != nil && file == "" {
			file = m[1]
			funcs = append(funcs, m[2])
			continue
		}
		if m := sanitizerAt.FindStringSubmatch(body); m != nil {
			funcs = append(funcs, slices.DeleteFunc(m[1:], func(f string) bool { return f == "" })...)
			continue
		}
		if m := ripAt.FindStringSubmatch(body); m != nil {
			funcs = append(funcs, m[1])
			continue
		}
		if m := reorderedTo.FindStringSubmatch(body); m != nil {
			funcs = append(funcs, m[1])
			continue
		}
		if stackStart.MatchString(body) {
			inTrace, frames = true, 0
			continue
		}
		m := frameAt.FindStringSubmatch(body)
		if !inTrace || m == nil || m[1] != "" || matches(machinery, m[2]) || frames >= traceFrames {
			continue
		}
		funcs = append(funcs, m[2])
		frames++
	}
	for _, c := range seedCode {
		if slices.Contains(c.files, file) {
			return c.seed, file
		}
	}
	for _, f := range funcs {
		for _, c := range seedCode {
			if matches(c.funcs, f) {
				return c.seed, f
			}
		}
	}
	return "", ""
}

// matches reports whether name is one of patterns (a pattern ending in "*"
// is a prefix).
func matches(patterns []string, name string) bool {
	name, _, _ = strings.Cut(name, ".") // a compiler's suffix: foo.cold, foo.isra.0
	for _, p := range patterns {
		if pre, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, pre) || p == name {
			return true
		}
	}
	return false
}

// blamedElsewhere reports whether t, a failed test of seed, failed on
// kernel reports (its own, or its window's: reports) that all name other
// seeds' code (attribute): those seeds are BROKEN (blame), and t does not
// judge its own. A report that names seed's code, or no seed's, leaves t
// to judge seed as any failure does.
func (r *Run) blamedElsewhere(t *Test, seed feature.Seed, o observation, get func(feature.Seed) *evidence) bool {
	lines := r.reports(t, o)
	if len(lines) == 0 || t.untested(o) != "" {
		return false
	}
	att := attribute(lines)
	blame(t, att, get)
	return !att.unnamed && !att.names(seed)
}

// reports are the kernel reports t failed on: those attached to it, or,
// when its kmsg watcher failed it (a Kernel record), those attached to the
// nearest test whose window held it (a subtest has no window of its own).
func (r *Run) reports(t *Test, o observation) []string {
	if len(t.Kernel) > 0 || !slices.ContainsFunc(o.records, func(rec feature.Record) bool { return rec.Kernel }) {
		return t.Kernel
	}
	for name := t.Name; ; {
		i := strings.LastIndex(name, "/")
		if i < 0 {
			return nil
		}
		name = name[:i]
		if p := r.byName[key(t.Package, name)]; p != nil && len(p.Kernel) > 0 {
			return p.Kernel
		}
	}
}

// blame makes each seed whose code a report of t names BROKEN, with the
// report and where it came.
func blame(t *Test, att attribution, get func(feature.Seed) *evidence) {
	where := ShortPackage(t.Package) + "." + t.Name
	if t.Name == "" {
		where = ShortPackage(t.Package) + " (the test binary)"
	}
	for _, s := range att.seeds {
		a := get(s)
		a.broken = cmp.Or(a.broken, "a report in its code, during "+where+": "+att.why[s])
	}
}

// elsewhere says why t, failed on reports in other seeds' code, judges
// nothing of its own seed.
func (r *Run) elsewhere(t *Test, o observation) string {
	var names []string
	for _, s := range attribute(r.reports(t, o)).seeds {
		names = append(names, string(s))
	}
	return "not judged: a kernel report in the code of " + strings.Join(names, ", ") + " ended it (judged there)"
}
