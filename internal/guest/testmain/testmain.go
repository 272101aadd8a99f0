// Package testmain makes leaks failures: a suite's TestMain runs its tests
// through Run, which fails the binary when the tests left file descriptors
// open (sockets, tun files, BPF objects, namespace handles) or created links
// in the namespace the binary started in — the host's, when the suites run
// on a host kernel.
package testmain

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf/rlimit"
	"github.com/vishvananda/netlink"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/margin"
)

// settle bounds how long Run waits for closes that finish asynchronously
// (finalizers, goroutines ending) before it calls what is left a leak.
const settle = 2 * time.Second

// atEnd is what Run closes after the tests, before the leak check.
var atEnd []func() error

// running is set while Run runs the tests: what AtEnd registers will close.
var running bool

// AtEnd registers close to run once the binary's tests have ended, before
// Run looks for leaks: for what the tests share, loaded once (a BPF
// collection). Call it from the tests' goroutine, not from a parallel one.
func AtEnd(close func() error) { atEnd = append(atEnd, close) }

// Running reports whether the binary's tests run under Run, so that what
// they register with AtEnd is closed: a package whose TestMain is not Run
// must not share what nothing would close.
func Running() bool { return running }

// Run runs m and returns the exit code: m's, or 1 when something leaked.
// Under -short it runs nothing: the suites need root, namespaces and a
// kernel to judge, and -short means unit tests only.
func Run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println("testmain: a privileged suite: no tests run with -short")
		return 0
	}
	// The suites load BPF programs and maps; kernels before 5.11 charge
	// their memory to RLIMIT_MEMLOCK.
	if err := rlimit.RemoveMemlock(); err != nil {
		fmt.Fprintf(os.Stderr, "testmain: lift RLIMIT_MEMLOCK for BPF: %v\n", err)
		return 1
	}
	primePoller()
	fds, errFD := openFDs()
	links, errLink := linkNames()
	running = true
	code := m.Run()
	running = false
	for _, close := range atEnd {
		if err := close(); err != nil {
			harness("close what the tests shared: %v", err)
			code = 1
		}
	}
	// How close this binary's bounded waits came to their limits.
	fmt.Println(margin.Line())
	if errFD != nil || errLink != nil {
		harness("leak check not possible: %v %v", errFD, errLink)
		return 1
	}

	var leakedFDs, leakedLinks []string
	for deadline := time.Now().Add(settle); ; time.Sleep(50 * time.Millisecond) {
		nowFDs, _ := openFDs()
		nowLinks, _ := linkNames()
		leakedFDs, leakedLinks = added(fds, nowFDs), added(links, nowLinks)
		if len(leakedFDs)+len(leakedLinks) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(leakedFDs) > 0 {
		harness("tests leaked %d file descriptors: %v", len(leakedFDs), leakedFDs)
		code = 1
	}
	if len(leakedLinks) > 0 {
		harness("tests created links outside their namespaces: %v", leakedLinks)
		code = 1
	}
	return code
}

// harness reports a failure of the suite's own machinery (a leak), as the
// binary's record: the judge calls its seeds error, since the kernel did
// not fail them.
func harness(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Println(feature.Record{Fault: feature.Harness, Why: msg}.String())
	fmt.Fprintln(os.Stderr, "testmain: FAIL: "+msg)
}

// primePoller makes the Go runtime open its own epoll and eventfd
// descriptors now, so that they are in the "before" snapshot and are not
// taken for leaks of the tests' first file I/O.
func primePoller() {
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	r.Close()
	w.Close()
}

// openFDs lists the process's descriptors as "N -> target".
func openFDs() ([]string, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // the directory's own descriptor, closed meanwhile
		}
		out = append(out, e.Name()+" -> "+target)
	}
	return out, nil
}

func linkNames() ([]string, error) {
	ls, err := netlink.LinkList()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range ls {
		out = append(out, l.Attrs().Name)
	}
	return out, nil
}

// added returns what is in now and not in before.
func added(before, now []string) []string {
	var out []string
	for _, s := range now {
		if !slices.Contains(before, s) {
			out = append(out, s)
		}
	}
	return out
}
