package kernels

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xmitcheck/xmitcheck/kernels/debian"
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

// Catalog lists the kernels xmitcheck knows by name, then the two other
// forms --kernel takes.
func Catalog() []Entry {
	var out []Entry
	for _, s := range debian.Kernels {
		out = append(out, Entry{Name: s.Name, Suite: s.Suite, Description: s.Description})
	}
	return append(out,
		Entry{Name: "host", Description: "the running kernel, no VM (needs root; every test uses its own network namespace)"},
		Entry{
			Name:        "PATH",
			Description: "a bzImage/vmlinuz (with --modules DIR for its lib/modules/V) or a built kernel tree",
		},
	)
}

// validNames is the list an unknown-kernel error offers.
func validNames() string {
	var names []string
	for _, s := range debian.Kernels {
		names = append(names, s.Name)
	}
	return strings.Join(append(names, "host"), ", ")
}

// NameOfRelease returns the catalog kernel whose Debian packages build a
// kernel of this release (uname -r): "7.3.4+deb13-amd64" is debian:7.3,
// "6.12.117+deb13-rt-amd64" debian:6.12-rt. A release of no catalog series
// (a kernel built elsewhere) has none.
func NameOfRelease(release string) (string, bool) {
	for _, s := range debian.Kernels {
		if s.MatchesRelease(release) {
			return s.Name, true
		}
	}
	return "", false
}

// CheckVng returns an error when virtme-ng cannot boot the named kernel:
// Debian's cloud flavour has no 9p (CONFIG_NET_9P is off), which vng
// mounts the guest's root over when virtiofsd cannot run.
func CheckVng(name string) error {
	if s, ok := debian.Lookup(name); ok && s.Flavour == "cloud-amd64" {
		return fmt.Errorf("%s cannot boot under virtme-ng: Debian's cloud kernels have no 9p; use --backend native", name)
	}
	return nil
}
