package results

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// lane is a run of one kernel's VM that ran pkgs, each passing TestA; the
// last of them is still in TestB when the run ends.
func lane(boot, total time.Duration, pkgs ...string) *Run {
	r := NewRun("debian:7.3 (7.3.4-1)")
	r.AddBoot(boot, total, "tcg")
	for i, p := range pkgs {
		r.Add(Event{Action: "run", Package: p, Test: "TestA"})
		r.Add(Event{Action: "pass", Package: p, Test: "TestA"})
		if i == len(pkgs)-1 {
			r.Add(Event{Action: "run", Package: p, Test: "TestB"})
			continue
		}
		r.Add(Event{Action: "pass", Package: p})
	}
	return r
}

// TestMerge: three VMs' runs make one, in the binaries' order, as long as the
// longer and with the earlier first test; a test one VM left unfinished
// fails, the kernel's own reports come last.
func TestMerge(t *testing.T) {
	a := lane(9*time.Second, 100*time.Second, "s/devmap", "s/tun")
	b := lane(7*time.Second, 120*time.Second, "s/qdisc", "s/vhost")
	b.Note("booted again")
	c := NewRun("debian:7.3 (7.3.4-1)") // a VM that never booted
	c.AttachKernel("", "boot", []string{"no init found"})
	a.Merge(b, c)
	a.SortPackages([]string{"s/devmap", "s/qdisc", "s/tun", "s/vhost"})
	a.Finish(nil)

	var got []string
	for _, x := range a.Tests {
		got = append(got, x.Package+" "+x.Name+" "+string(x.Status))
	}
	assert.Check(t, is.DeepEqual(got, []string{
		"s/devmap TestA pass", "s/devmap  pass",
		"s/qdisc TestA pass", "s/qdisc  pass",
		"s/tun TestA pass", "s/tun TestB fail",
		"s/vhost TestA pass", "s/vhost TestB fail",
		"kernel boot fail",
	}))
	assert.Check(t, is.DeepEqual(a.Counts(), Tally{Pass: 4, Fail: 3}))
	assert.Check(t, is.Equal(a.Total, 120*time.Second), "the longer VM's time")
	assert.Check(t, is.Equal(a.BootToFirstTest, 7*time.Second), "the first test of either")
	assert.Check(t, is.DeepEqual(a.Notes, []string{"booted again"}))
	var pkgs []string
	for _, e := range a.events {
		if len(pkgs) == 0 || pkgs[len(pkgs)-1] != e.Package {
			pkgs = append(pkgs, e.Package)
		}
	}
	assert.Check(t, is.DeepEqual(pkgs, []string{"s/devmap", "s/qdisc", "s/tun", "s/vhost"}))

	a.AttachKernelAt("s/vhost", "TestA", "WARNING", "", []string{"WARNING: x"})
	assert.Check(t, is.Equal(a.Counts().Fail, 4), "a merged test is found by name")
}
