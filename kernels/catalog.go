package kernels

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// DefaultKernel is the kernel `xmitcheck run` uses when none is given: the
// newest Debian kernel, the first with IFF_BACKPRESSURE.
var DefaultKernel = "debian:7.3"

// ErrUnknownKernel is wrapped by Resolve when a name is neither in the
// catalog nor "host" nor a path.
var ErrUnknownKernel = errors.New("unknown kernel")

// Entry is one row of the catalog.
type Entry struct {
	// Name is what --kernel takes.
	Name string
	// Suite is the Debian suite the kernel comes from; empty for host and
	// local kernels.
	Suite string
	// Description says what the kernel is and why it is in the catalog.
	Description string
}

// series is one Debian kernel of the catalog: where Debian keeps it and how
// its packages are named.
type series struct {
	Entry
	// upstream is the kernel series, "7.3".
	upstream string
	// flavour is Debian's kernel flavour, the end of the release:
	// "amd64" (generic), "rt-amd64" (PREEMPT_RT), "cloud-amd64".
	flavour string
	// split is true for the packaging of 7.2 and later: the image in
	// linux-binary-unsigned-ABI-FLAVOUR, the modules in
	// linux-modules-ABI-FLAVOUR, modules.builtin and the config in
	// linux-base-ABI-FLAVOUR, all under usr/lib/modules/ABI-FLAVOUR/. Before,
	// one linux-image-ABI-FLAVOUR-unsigned holds boot/vmlinuz-ABI-FLAVOUR and
	// {usr/,}lib/modules/ABI-FLAVOUR/.
	split bool
}

// The rt and cloud flavours carry the generic flavour's tun, vhost-net,
// devmap and qdisc sources; their configs differ (PREEMPT_RT; no 9p in
// cloud).
var debianSeries = []series{
	{Entry{"debian:5.10", "bullseye", "Debian 11; devmap programs run at enqueue, no XDP live frames"},
		"5.10", "amd64", false},
	{Entry{"debian:6.1", "bookworm", "Debian 12; devmap programs run at flush"},
		"6.1", "amd64", false},
	{Entry{"debian:6.12", "trixie", "Debian 13; veth has qdisc backpressure"},
		"6.12", "amd64", false},
	{Entry{"debian:6.12-rt", "trixie", "debian:6.12's PREEMPT_RT flavour"},
		"6.12", "rt-amd64", false},
	{Entry{"debian:6.12-cloud", "trixie", "debian:6.12's cloud flavour; no 9p, so --backend native only"},
		"6.12", "cloud-amd64", false},
	{Entry{"debian:7.2", "sid", "Debian unstable; __netif_schedule fast path (Qdisc.defer_list)"},
		"7.2", "amd64", true},
	{Entry{"debian:7.2-rt", "sid", "debian:7.2's PREEMPT_RT flavour"},
		"7.2", "rt-amd64", true},
	{Entry{"debian:7.2-cloud", "sid", "debian:7.2's cloud flavour; no 9p, so --backend native only"},
		"7.2", "cloud-amd64", true},
	{Entry{"debian:7.3", "trixie-backports", "Debian 13 backports; tun/vhost IFF_BACKPRESSURE and the fast path"},
		"7.3", "amd64", true},
	{Entry{"debian:7.3-rt", "trixie-backports", "debian:7.3's PREEMPT_RT flavour"},
		"7.3", "rt-amd64", true},
	{Entry{"debian:7.3-cloud", "trixie-backports", "debian:7.3's cloud flavour; no 9p, so --backend native only"},
		"7.3", "cloud-amd64", true},
}

// Catalog lists the kernels xmitcheck knows by name, then the two other
// forms --kernel takes.
func Catalog() []Entry {
	var out []Entry
	for _, s := range debianSeries {
		out = append(out, s.Entry)
	}
	return append(out,
		Entry{Name: "host", Description: "the running kernel, no VM (needs root; every test uses its own network namespace)"},
		Entry{
			Name:        "PATH",
			Description: "a bzImage/vmlinuz (with --modules DIR for its lib/modules/V) or a built kernel tree",
		},
	)
}

func lookupSeries(name string) (series, bool) {
	for _, s := range debianSeries {
		if s.Name == name {
			return s, true
		}
	}
	return series{}, false
}

// validNames is the list an unknown-kernel error offers.
func validNames() string {
	var names []string
	for _, s := range debianSeries {
		names = append(names, s.Name)
	}
	return strings.Join(append(names, "host"), ", ")
}

// imagePattern matches the package holding the series' image of its
// flavour and captures its ABI ("7.3.4+deb13", "6.1.0-50"); the ABI has no
// dash-separated word, so the generic pattern never matches an rt or cloud
// image, and -dbg packages and meta-packages never match.
func (s series) imagePattern() *regexp.Regexp {
	abi := s.abiPattern()
	flavour := regexp.QuoteMeta("-" + s.flavour)
	if s.split {
		return regexp.MustCompile(`^linux-binary-unsigned-` + abi + flavour + `$`)
	}
	return regexp.MustCompile(`^linux-image-` + abi + flavour + `-unsigned$`)
}

// NameOfRelease returns the catalog kernel whose Debian packages build a
// kernel of this release (uname -r): "7.3.4+deb13-amd64" is debian:7.3,
// "6.12.117+deb13-rt-amd64" debian:6.12-rt. A release of no catalog series
// (a kernel built elsewhere) has none.
func NameOfRelease(release string) (string, bool) {
	for _, s := range debianSeries {
		if s.releasePattern().MatchString(release) {
			return s.Name, true
		}
	}
	return "", false
}

// abiPattern matches the ABI of the series' packages ("7.3.4+deb13",
// "6.1.0-50"), without a dash-separated word: a flavour never matches
// another's.
func (s series) abiPattern() string {
	return `(` + regexp.QuoteMeta(s.upstream) + `\.[0-9]+(?:-[0-9]+|\+deb[0-9]+)?)`
}

// releasePattern matches the release (uname -r) of the series' kernels:
// the ABI, then the flavour.
func (s series) releasePattern() *regexp.Regexp {
	return regexp.MustCompile(`^` + s.abiPattern() + regexp.QuoteMeta("-"+s.flavour) + `$`)
}

// CheckVng returns an error when virtme-ng cannot boot the named kernel:
// Debian's cloud flavour has no 9p (CONFIG_NET_9P is off), which vng
// mounts the guest's root over when virtiofsd cannot run.
func CheckVng(name string) error {
	if s, ok := lookupSeries(name); ok && s.flavour == "cloud-amd64" {
		return fmt.Errorf("%s cannot boot under virtme-ng: Debian's cloud kernels have no 9p; use --backend native", name)
	}
	return nil
}
