package observe

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// failFast is what the binary knows of its seeds under feature.FailFastEnv:
// each top-level test's seed (Of), the first test each seed failed, and
// the tests whose failure says nothing of their seed: those that failed
// on a fault, and those that run over another seed's machinery (LeansOn),
// whose failure may be that seed's.
var failFast struct {
	mu      sync.Mutex
	seeds   map[string]feature.Seed
	failed  map[feature.Seed]string
	faulted map[string]bool
}

// Step starts a test's own work (netenv.New calls it for every test that
// makes a namespace, Of for every top-level test). Under
// feature.FailFastEnv, a test of a seed that already failed in this binary
// is skipped here, saying which test failed it, and a test that fails on
// something else than a fault makes its seed's next tests skip: once the
// seed is BROKEN, its other tests cost time and decide nothing. Without
// the variable it does nothing.
func Step(tb testing.TB) {
	tb.Helper()
	if os.Getenv(feature.FailFastEnv) == "" {
		return
	}
	seed := seedOf(tb.Name())
	if seed == "" {
		return
	}
	failFast.mu.Lock()
	first := failFast.failed[seed]
	failFast.mu.Unlock()
	if first != "" {
		tb.Skipf("fail-fast: seed %s already failed in this binary (%s): not run", seed, first)
	}
	tb.Cleanup(func() {
		failFast.mu.Lock()
		defer failFast.mu.Unlock()
		if !tb.Failed() || tb.Skipped() || faultedUnder(tb.Name()) {
			return
		}
		if failFast.failed == nil {
			failFast.failed = map[feature.Seed]string{}
		}
		if failFast.failed[seed] == "" {
			failFast.failed[seed] = tb.Name()
		}
	})
}

// tagged remembers the seed of a top-level test (Of).
func tagged(name string, seed feature.Seed) {
	failFast.mu.Lock()
	defer failFast.mu.Unlock()
	if failFast.seeds == nil {
		failFast.seeds = map[string]feature.Seed{}
	}
	failFast.seeds[name] = seed
}

// seedOf is the seed of the test name, or of its nearest tagged ancestor.
func seedOf(name string) feature.Seed {
	failFast.mu.Lock()
	defer failFast.mu.Unlock()
	for {
		if s, ok := failFast.seeds[name]; ok {
			return s
		}
		i := strings.LastIndex(name, "/")
		if i < 0 {
			return ""
		}
		name = name[:i]
	}
}

// faulted remembers a test that failed on a fault (Fault, Lost), or that
// runs over another seed's machinery (LeansOn).
func faulted(name string) {
	failFast.mu.Lock()
	defer failFast.mu.Unlock()
	if failFast.faulted == nil {
		failFast.faulted = map[string]bool{}
	}
	failFast.faulted[name] = true
}

// faultedUnder reports whether name or one of its subtests failed on a
// fault or leans on another seed; the caller holds failFast.mu. A parent
// fails with any failed subtest: such a one does not fail its seed.
func faultedUnder(name string) bool {
	for n := range failFast.faulted {
		if n == name || strings.HasPrefix(n, name+"/") {
			return true
		}
	}
	return false
}
