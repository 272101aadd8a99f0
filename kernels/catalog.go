package kernels

import (
	"errors"
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
	// split is true for the packaging of 7.2 and later: the image in
	// linux-binary-unsigned-ABI-amd64, the modules in linux-modules-ABI-amd64,
	// modules.builtin and the config in linux-base-ABI-amd64, all under
	// usr/lib/modules/ABI-amd64/. Before, one linux-image-ABI-amd64-unsigned
	// holds boot/vmlinuz-ABI-amd64 and {usr/,}lib/modules/ABI-amd64/.
	split bool
}

var debianSeries = []series{
	{Entry{"debian:5.10", "bullseye", "Debian 11; devmap programs run at enqueue, no XDP live frames"}, "5.10", false},
	{Entry{"debian:6.1", "bookworm", "Debian 12; devmap programs run at flush"}, "6.1", false},
	{Entry{"debian:6.12", "trixie", "Debian 13; veth has qdisc backpressure"}, "6.12", false},
	{Entry{"debian:7.2", "sid", "Debian unstable; __netif_schedule fast path (Qdisc.defer_list)"}, "7.2", true},
	{Entry{"debian:7.3", "trixie-backports", "Debian 13 backports; tun/vhost IFF_BACKPRESSURE and the fast path"}, "7.3", true},
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
		Entry{Name: "PATH", Description: "a bzImage/vmlinuz (with --modules DIR for its lib/modules/V) or a built kernel tree"},
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

// imagePattern matches the package holding the series' generic amd64
// image and captures its ABI ("7.3.4+deb13", "6.1.0-50"), so that cloud and
// rt flavours, -dbg packages and meta-packages never match.
func (s series) imagePattern() *regexp.Regexp {
	abi := `(` + regexp.QuoteMeta(s.upstream) + `\.[0-9]+(?:-[0-9]+|\+deb[0-9]+)?)`
	if s.split {
		return regexp.MustCompile(`^linux-binary-unsigned-` + abi + `-amd64$`)
	}
	return regexp.MustCompile(`^linux-image-` + abi + `-amd64-unsigned$`)
}
