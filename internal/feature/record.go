package feature

import (
	"encoding/json"
	"strings"
)

// Record is what a test tells the runner besides pass, fail or skip: which
// seed it tests, which feature a probe found missing, which seed's
// behaviour it saw present or absent, which known issue it saw. Tests
// write records as log lines (Of, Require, Shows, Absent, Known); the
// runner reads them back with
// ParseRecord to decide one verdict per seed.
type Record struct {
	// Seed alone tags the test (and its subtests) as a test of the seed;
	// with Absent, the test observed the seed's behaviour missing.
	Seed Seed `json:"seed,omitempty"`
	// Feature with Absent: a probe found the feature missing; with
	// Present, a probe found it there.
	Feature Feature `json:"feature,omitempty"`
	Absent  bool    `json:"absent,omitempty"`
	Present bool    `json:"present,omitempty"`
	// Shown with Seed: the test observed the seed's behaviour itself (not
	// only something every kernel does); see Shows.
	Shown bool `json:"shown,omitempty"`
	// Issue: the test observed exactly this known defect.
	Issue Issue `json:"issue,omitempty"`
	// Fault: the test failed, and not through the kernel: who it was.
	Fault Fault `json:"fault,omitempty"`
	// Kernel: the test failed because the kernel logged a report (a splat
	// or a splat taint) while it ran: the runner attaches the report
	// itself, from the console, to the test whose window held it.
	Kernel bool `json:"kernel,omitempty"`
	// Uses: the test runs over this seed's machinery (a qdisc test over a
	// tap with IFF_BACKPRESSURE leans on seed 000-tun); see LeansOn.
	Uses Seed `json:"uses,omitempty"`
	// Raced with Handshakes: the test raced seed Raced's handshake (a
	// stop and its wake, an owner's batch) this many times on a kernel
	// whose sanitizer watched it; Why says which and what it did. The
	// judge reports them, so that a clean run says how much was watched.
	Raced      Seed   `json:"raced,omitempty"`
	Handshakes uint64 `json:"handshakes,omitempty"`
	// Why is what the probe read or the test observed.
	Why string `json:"why,omitempty"`
}

// Fault is what a test failed on when it was not the kernel. A failure
// without one is the kernel's (an assertion about its behaviour); the
// judge makes a seed BROKEN only for those, and error for the others.
type Fault string

const (
	// Environment: what the test needs is not there or cannot be used:
	// a device node, a module, BTF, tracefs, a program that cannot attach.
	Environment Fault = "environment"
	// Instrument: something that counts for the test (a BPF program, a
	// buffer, a map, a histogram) lost events, so its counts cannot judge.
	Instrument Fault = "instrument"
	// Harness: the test's own machinery failed: a leak, a panic in a
	// helper.
	Harness Fault = "harness"
)

// recordPrefix starts a record in a test's output.
const recordPrefix = "xmitcheck:"

// String is the record as a log line.
func (r Record) String() string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // only strings and a bool
	}
	return recordPrefix + string(b)
}

// ParseRecord finds a record in one line of a test's output (after go
// test's "file.go:N: " prefix); the margins and profile lines are not
// records.
func ParseRecord(line string) (Record, bool) {
	i := strings.Index(line, recordPrefix+"{")
	if i < 0 || IsProtocolLine(line) {
		return Record{}, false
	}
	var r Record
	if json.Unmarshal([]byte(line[i+len(recordPrefix):]), &r) != nil {
		return Record{}, false
	}
	return r, true
}

// JudgedEnv, set in a test binary's environment, says that a judge reads
// its records (xmitcheck run sets it): a test that saw a seed's absence or
// a known defect then ends as a skip that carries the record, and the
// judge makes it an expected failure or a failure. Without it (plain go
// test) such a test fails. Tests never learn what their kernel is
// expected to show.
const JudgedEnv = "XMITCHECK_JUDGED"

// FailFastEnv, set in a test binary's environment, stops a seed's tests at
// its first failure (xmitcheck bisect, run -failfast): the seed is BROKEN
// then, and its remaining tests are skipped, saying so
// (internal/guest/observe.Step); other seeds' tests go on.
const FailFastEnv = "XMITCHECK_FAILFAST"
