package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/xmitcheck/xmitcheck/kernels"
)

const usageText = `usage: xmitcheck COMMAND [flags]

Commands:
  run [flags] [PKG...]      build the suites (default ./suites/...), boot each kernel, run them, report
  exec [flags] BINARY ARGS  run one test binary in a VM: go test -exec 'xmitcheck exec --kernel debian:7.3'
  kernels                   list the kernel catalog and what is cached
  kernels fetch NAME...     fetch kernels into the cache
  kernels config            print the kernel config fragment the suites need
  kernels source NAME DIR   fetch and unpack Debian's linux-source of a catalog kernel
  kernels build --tree DIR  build a kernel tree (--revert/--apply patches) into build:NAME
  matrix [flags] [PKG...]   every suite on every catalog kernel and the host, several at once, into one folder
  report [-o F] DIR...      one static HTML page (and --markdown) from matrix folders
  compare --base K1 --patched K2 [PKG...]
                            pre-merge check: verdicts side by side, then interleaved benchmarks (benchstat)
  bisect [flags] [PKG...]   one step of git bisect run: build --tree (default .), run, judge
  suites build -o DIR [PKG...]
                            compile the suites' test binaries into DIR, nothing booted
  suites install -o DIR [PKG...]
                            write a kselftest collection for the kernel's own runner (docs/kselftest.md)
  kselftest SUITE [flags]   an installed collection's test: one suite on the running kernel, KTAP
  lava job|results ...      a LAVA job of an installed collection; its log read back for report
  bench boot [flags]        measure boot-to-first-test per backend
  bench profile [flags] [PKG...]
                            per test, the seconds in setup, traffic, waits and teardown
  version                   print xmitcheck's version and the revision it was built from

KERNELS
Suites (PKG): compiled with go in the xmitcheck checkout -C names or the current directory is in,
else from the source built into xmitcheck, so it runs from any directory.
Exit codes: 0 passed, 1 a test failed or a verdict differs from its expectation, 2 usage or
infrastructure error, 3 kernel crash or hang. bisect: 0 good, 1 bad, 125 untestable, 128 usage.
Run 'xmitcheck COMMAND -h' for a command's flags.
`

// usage is the top-level usage, every catalog kernel named.
var usage = strings.Replace(usageText, "KERNELS\n", kernelsLine(), 1)

// kernelsLine says what --kernel takes: every catalog name, the -rt and
// -cloud flavours included, and the other forms, wrapped.
func kernelsLine() string {
	words := []string{"Kernels:"}
	for _, e := range kernels.Catalog() {
		if e.Name != "PATH" {
			words = append(words, e.Name)
		}
	}
	words[len(words)-1] += ","
	words = append(words, strings.Fields("build:NAME, or a path to a bzImage (--modules DIR) "+
		"or a built kernel tree (--kernel . in the tree).")...)
	var b strings.Builder
	n := 0
	for _, w := range words {
		if n > 0 && n+1+len(w) > 100 {
			b.WriteString("\n")
			n = 0
		} else if n > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String() + "\n"
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return exitInfra
	}
	cmd, rest := args[0], args[1:]
	var err error
	code := exitOK
	switch cmd {
	case "run":
		code, err = cmdRun(rest)
	case "exec":
		code, err = cmdExec(rest)
	case "kernels":
		err = cmdKernels(rest)
	case "bench":
		code, err = cmdBench(rest)
	case "bisect":
		return cmdBisect(rest)
	case "compare":
		code, err = cmdCompare(rest)
	case "matrix":
		code, err = cmdMatrix(rest)
	case "report":
		code, err = cmdReport(rest)
	case "suites":
		err = cmdSuites(rest)
	case "kselftest":
		return cmdKselftest(rest)
	case "lava":
		code, err = cmdLava(rest)
	case "version":
		err = cmdVersion(rest)
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
		return exitOK
	default:
		err = usagef("unknown command %q: use run, exec, kernels, matrix, report, compare, bisect, suites, kselftest, "+
			"lava, bench or version (xmitcheck -h)", cmd)
	}
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		return fail(err)
	}
	return code
}

// errHelp ends a command that printed its usage because -h asked: exit 0.
var errHelp = errors.New("usage shown")

// usages holds each flag set's usage printer: fs.Usage stays quiet, since
// the flag package calls it on every error too.
var usages = map[*flag.FlagSet]func(){}

// newFlags returns the flag set of `xmitcheck name`: args is its synopsis
// after the command ("[flags] [PKG...]"), about what it does. -h prints
// both and the flags on stdout; errors are returned.
func newFlags(name, args, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	usages[fs] = func() {
		fmt.Printf("usage: xmitcheck %s %s\n\n%s\n", name, args, about)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Print("\nFlags:\n")
			fs.SetOutput(os.Stdout)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
		}
	}
	return fs
}

// parse parses args: -h prints the usage and returns errHelp, a bad flag
// is a usage error that names the command.
func parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == flag.ErrHelp {
		usages[fs]()
		return errHelp
	}
	if err != nil {
		return usagef("%s: %v (xmitcheck %[1]s -h lists the flags)", fs.Name(), err)
	}
	return nil
}

// usageOnly is the flag set of a command without flags: it still answers
// -h, and refuses any flag.
func usageOnly(name, args, about string, given []string) error {
	return parse(newFlags(name, args, about), given)
}

// listFlag collects a repeatable flag (--kernel a --kernel b, or a,b).
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for s := range strings.SplitSeq(v, ",") {
		if s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
