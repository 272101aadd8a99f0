package results

import "slices"

// Merge moves into r what others recorded: runs of the same kernel, each
// of other test binaries, that ran at the same time as r (several VMs of
// one kernel). Their tests, events, notes and tries the emulator ended
// follow r's. The run took as long as its longest part, and its first
// test came with the first part's.
func (r *Run) Merge(others ...*Run) {
	for _, o := range others {
		r.Tests = append(r.Tests, o.Tests...)
		for k, t := range o.byName {
			r.byName[k] = t
		}
		r.running = append(r.running, o.running...)
		r.events = append(r.events, o.events...)
		r.earlier = append(r.earlier, o.earlier...)
		r.Notes = append(r.Notes, o.Notes...)
		r.Total = max(r.Total, o.Total)
		if o.BootToFirstTest != 0 && (r.BootToFirstTest == 0 || o.BootToFirstTest < r.BootToFirstTest) {
			r.BootToFirstTest = o.BootToFirstTest
		}
		if r.Accel == "" {
			r.Accel = o.Accel
		}
	}
}

// SortPackages puts r's tests and events in the order of pkgs, keeping
// each package's own order; what belongs to none of them (the kernel's
// reports while no binary ran) goes last.
func (r *Run) SortPackages(pkgs []string) {
	rank := func(pkg string) int {
		if i := slices.Index(pkgs, pkg); i >= 0 {
			return i
		}
		return len(pkgs)
	}
	slices.SortStableFunc(r.Tests, func(a, b *Test) int { return rank(a.Package) - rank(b.Package) })
	slices.SortStableFunc(r.events, func(a, b Event) int { return rank(a.Package) - rank(b.Package) })
}
