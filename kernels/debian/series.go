// Package debian resolves and fetches Debian's kernel packages: the series
// of the catalog, a private apt index per suite in the kernel cache, the
// chosen packages downloaded, checked and unpacked, and linux-source.
package debian

import "regexp"

// Series is one Debian kernel of the catalog: where Debian keeps it and how
// its packages are named.
type Series struct {
	// Name is what --kernel takes, "debian:7.3".
	Name string
	// Suite is the Debian suite the kernel comes from.
	Suite string
	// Description says what the kernel is and why it is in the catalog.
	Description string
	// Upstream is the kernel series, "7.3".
	Upstream string
	// Flavour is Debian's kernel flavour, the end of the release:
	// "amd64" (generic), "rt-amd64" (PREEMPT_RT), "cloud-amd64".
	Flavour string
	// Split is true for the packaging of 7.2 and later: the image in
	// linux-binary-unsigned-ABI-FLAVOUR, the modules in
	// linux-modules-ABI-FLAVOUR, modules.builtin and the config in
	// linux-base-ABI-FLAVOUR, all under usr/lib/modules/ABI-FLAVOUR/. Before,
	// one linux-image-ABI-FLAVOUR-unsigned holds boot/vmlinuz-ABI-FLAVOUR and
	// {usr/,}lib/modules/ABI-FLAVOUR/.
	Split bool
}

// Kernels are the catalog's Debian kernels. The rt and cloud flavours carry
// the generic flavour's tun, vhost-net, devmap and qdisc sources; their
// configs differ (PREEMPT_RT; no 9p in cloud).
var Kernels = []Series{
	{"debian:5.10", "bullseye", "Debian 11; devmap programs run at enqueue, no XDP live frames",
		"5.10", "amd64", false},
	{"debian:6.1", "bookworm", "Debian 12; devmap programs run at flush",
		"6.1", "amd64", false},
	{"debian:6.12", "trixie", "Debian 13; veth has qdisc backpressure",
		"6.12", "amd64", false},
	{"debian:6.12-rt", "trixie", "debian:6.12's PREEMPT_RT flavour",
		"6.12", "rt-amd64", false},
	{"debian:6.12-cloud", "trixie", "debian:6.12's cloud flavour; no 9p, so --backend native only",
		"6.12", "cloud-amd64", false},
	{"debian:7.2", "sid", "Debian unstable; __netif_schedule fast path (Qdisc.defer_list)",
		"7.2", "amd64", true},
	{"debian:7.2-rt", "sid", "debian:7.2's PREEMPT_RT flavour",
		"7.2", "rt-amd64", true},
	{"debian:7.2-cloud", "sid", "debian:7.2's cloud flavour; no 9p, so --backend native only",
		"7.2", "cloud-amd64", true},
	{"debian:7.3", "trixie-backports", "Debian 13 backports; tun/vhost IFF_BACKPRESSURE and the fast path",
		"7.3", "amd64", true},
	{"debian:7.3-rt", "trixie-backports", "debian:7.3's PREEMPT_RT flavour",
		"7.3", "rt-amd64", true},
	{"debian:7.3-cloud", "trixie-backports", "debian:7.3's cloud flavour; no 9p, so --backend native only",
		"7.3", "cloud-amd64", true},
}

// Lookup returns the series called name.
func Lookup(name string) (Series, bool) {
	for _, s := range Kernels {
		if s.Name == name {
			return s, true
		}
	}
	return Series{}, false
}

// imagePattern matches the package holding the series' image of its
// flavour and captures its ABI ("7.3.4+deb13", "6.1.0-50"); the ABI has no
// dash-separated word, so the generic pattern never matches an rt or cloud
// image, and -dbg packages and meta-packages never match.
func (s Series) imagePattern() *regexp.Regexp {
	abi := s.abiPattern()
	flavour := regexp.QuoteMeta("-" + s.Flavour)
	if s.Split {
		return regexp.MustCompile(`^linux-binary-unsigned-` + abi + flavour + `$`)
	}
	return regexp.MustCompile(`^linux-image-` + abi + flavour + `-unsigned$`)
}

// abiPattern matches the ABI of the series' packages ("7.3.4+deb13",
// "6.1.0-50"), without a dash-separated word: a flavour never matches
// another's.
func (s Series) abiPattern() string {
	return `(` + regexp.QuoteMeta(s.Upstream) + `\.[0-9]+(?:-[0-9]+|\+deb[0-9]+)?)`
}

// MatchesRelease says whether release (uname -r) is of a kernel of the
// series' packages: the ABI, then the flavour.
func (s Series) MatchesRelease(release string) bool {
	return regexp.MustCompile(`^` + s.abiPattern() + regexp.QuoteMeta("-"+s.Flavour) + `$`).MatchString(release)
}
