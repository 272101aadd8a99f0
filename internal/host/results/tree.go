package results

import "strings"

// node is one level of a run's tree: a package, a test or a subtest.
type node struct {
	name     string
	test     *Test // nil for a package without a record of its own
	children []*node
}

// tree groups a run's tests by package, then by the "/" of their names,
// keeping the order in which they started.
func (r *Run) tree() []*node {
	var pkgs []*node
	byPkg := map[string]*node{}
	for _, t := range r.Tests {
		p := byPkg[t.Package]
		if p == nil {
			p = &node{name: ShortPackage(t.Package)}
			byPkg[t.Package] = p
			pkgs = append(pkgs, p)
		}
		if t.Name == "" {
			p.test = t
			continue
		}
		parent := p
		for part := range strings.SplitSeq(t.Name, "/") {
			var next *node
			for _, c := range parent.children {
				if c.name == part {
					next = c
				}
			}
			if next == nil {
				next = &node{name: part}
				parent.children = append(parent.children, next)
			}
			parent = next
		}
		parent.test = t
	}
	return pkgs
}

// status is the node's own verdict, or the one its children add up to.
func (n *node) status() Status {
	if n.test != nil && n.test.Status == Fail {
		return Fail
	}
	if len(n.children) == 0 {
		if n.test == nil || n.test.Status == "" {
			return Fail
		}
		return n.test.Status
	}
	// Any pass makes the parent pass; else an expected failure makes it
	// XFAIL, not a skip.
	all := Skip
	for _, c := range n.children {
		switch c.status() {
		case Fail:
			return Fail
		case Pass:
			all = Pass
		case XFail:
			if all == Skip {
				all = XFail
			}
		}
	}
	return all
}

// ShortPackage turns "github.com/xmitcheck/xmitcheck/suites/tun" into
// "suites/tun": a package path from "suites/" on, or the whole path.
func ShortPackage(p string) string {
	if i := strings.Index(p, "/suites/"); i >= 0 {
		return p[i+1:]
	}
	return p
}
