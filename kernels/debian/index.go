package debian

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/xmitcheck/xmitcheck/kernels/internal/cachefile"
)

// Package is one Debian package as apt will download it.
type Package struct {
	Name     string
	Version  string
	Filename string // pool/main/l/linux/…deb, relative to the mirror URI
	SHA256   string
	Size     int64
}

// Choice is what resolution picked for a series.
type Choice struct {
	// Image holds the kernel image. Companions are the other packages of the
	// split packaging, same ABI and version: linux-modules-R (the modules) and
	// linux-base-R (config, System.map, modules.builtin, modules.order).
	Image      Package
	Companions []Package
	// Release is the kernel's uname -r, "7.3.4+deb13-amd64".
	Release string
}

// Debs lists the packages to download, image first.
func (c Choice) Debs() []Package { return append([]Package{c.Image}, c.Companions...) }

// companions are the names of the split packaging's other packages of a
// release.
func companions(release string) []string {
	return []string{"linux-modules-" + release, "linux-base-" + release}
}

// Pick updates the index when it is older than an hour and asks apt for the
// newest package of s in it. A failed update falls back to the older index
// when apt finds the series there.
func (a Index) Pick(ctx context.Context, s Series, progress io.Writer) (Choice, error) {
	if !a.fresh() {
		cachefile.Note(progress, "updating the package index of %s…", s.Suite)
		if err := a.Update(ctx); err != nil {
			c, perr := s.pick(ctx, a)
			if perr != nil {
				return Choice{}, err
			}
			cachefile.Note(progress, "%v: using the older index", err)
			return c, nil
		}
	}
	return s.pick(ctx, a)
}

// pick asks apt for the newest package of the series in a's suite: of the
// names apt knows (apt-cache pkgnames) those the image pattern accepts, each
// one's candidate (apt-cache policy), the newest of those in dpkg's order,
// and for the split packaging its companions of the same version. Each ABI
// is a package of its own, so apt's candidate Choice alone cannot pick one.
// apt-cache show gives the files; apt-get --print-uris would too, at twice
// the cost (it computes every package's candidate first).
func (s Series) pick(ctx context.Context, a Index) (Choice, error) {
	re := s.imagePattern()
	out, err := a.run(ctx, "apt-cache", "", "pkgnames", s.imagePrefix())
	if err != nil {
		return Choice{}, err
	}
	release := map[string]string{}
	var images, names []string
	for _, name := range strings.Fields(string(out)) {
		if m := re.FindStringSubmatch(name); m != nil {
			images = append(images, name)
			release[name] = m[1] + "-" + s.Flavour
			names = append(names, name)
			if s.Split {
				names = append(names, companions(release[name])...)
			}
		}
	}
	slices.Sort(images)
	candidates, err := a.candidates(ctx, names)
	if err != nil {
		return Choice{}, err
	}
	name, err := newest(ctx, images, candidates)
	if err != nil {
		return Choice{}, err
	}
	best := Choice{Image: Package{Name: name, Version: candidates[name]}, Release: release[name]}
	if name == "" {
		// Most likely the mirror dropped the series; another kernel of the
		// catalog still works.
		return Choice{}, fmt.Errorf(
			"no %s package in %s's index (want one matching %s): run `xmitcheck kernels` for the catalog",
			s.Name, a.suite, re)
	}
	if s.Split {
		for _, want := range companions(best.Release) {
			if candidates[want] != best.Image.Version {
				return Choice{}, fmt.Errorf(
					"%s %s has no %s of the same version in %s's index: the mirror is mid-update, try again later",
					best.Image.Name, best.Image.Version, want, a.suite)
			}
			best.Companions = append(best.Companions, Package{Name: want, Version: best.Image.Version})
		}
	}
	debs, err := a.files(ctx, best.Debs())
	if err != nil {
		return Choice{}, err
	}
	best.Image, best.Companions = debs[0], debs[1:]
	return best, nil
}

// imagePrefix is what every image package name of the series starts with.
func (s Series) imagePrefix() string {
	if s.Split {
		return "linux-binary-unsigned-" + s.Upstream + "."
	}
	return "linux-image-" + s.Upstream + "."
}

// newest returns the name whose candidate is the newest version in dpkg's
// order, "" when none has a candidate.
func newest(ctx context.Context, names []string, candidates map[string]string) (string, error) {
	best := ""
	for _, name := range names {
		v, ok := candidates[name]
		if !ok {
			continue
		}
		if best != "" {
			newer, err := newerVersion(ctx, v, candidates[best])
			if err != nil {
				return "", err
			}
			if !newer {
				continue
			}
		}
		best = name
	}
	return best, nil
}

// candidates returns the version apt would install of each named package
// that has one (apt-cache policy).
func (a Index) candidates(ctx context.Context, names []string) (map[string]string, error) {
	out := map[string]string{}
	if len(names) == 0 {
		return out, nil
	}
	text, err := a.run(ctx, "apt-cache", "", "policy", names...)
	if err != nil {
		return nil, err
	}
	name := ""
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutSuffix(line, ":"); ok && !strings.HasPrefix(line, " ") {
			name = n
			continue
		}
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "Candidate: ")
		if ok && name != "" && v != "(none)" {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// files fills in each package's Filename, Size and SHA256 from its record
// (apt-cache show NAME=VERSION), in the order of pkgs.
func (a Index) files(ctx context.Context, pkgs []Package) ([]Package, error) {
	text, err := a.run(ctx, "apt-cache", "", "show", pinned(pkgs)...)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(pkgs)
	for _, record := range strings.Split(string(text), "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(record, "\n") {
			if key, value, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, " ") {
				fields[key] = value
			}
		}
		i := slices.IndexFunc(out, func(p Package) bool {
			return p.Name == fields["Package"] && p.Version == fields["Version"]
		})
		if i < 0 {
			continue
		}
		size, err := strconv.ParseInt(fields["Size"], 10, 64)
		if err != nil || fields["Filename"] == "" || len(fields["SHA256"]) != 64 {
			return nil, fmt.Errorf("apt-cache show %s=%s: the record lacks Filename, Size or SHA256",
				out[i].Name, out[i].Version)
		}
		out[i].Filename, out[i].Size, out[i].SHA256 = fields["Filename"], size, fields["SHA256"]
	}
	for _, p := range out {
		if p.Filename == "" {
			return nil, fmt.Errorf("apt-cache show has no record of %s=%s", p.Name, p.Version)
		}
	}
	return out, nil
}

// newerVersion says whether Debian version a is newer than b, in dpkg's own
// order.
func newerVersion(ctx context.Context, a, b string) (bool, error) {
	err := exec.CommandContext(ctx, "dpkg", "--compare-versions", a, "gt", b).Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false, nil
	}
	return false, fmt.Errorf("dpkg --compare-versions %s gt %s: %w", a, b, err)
}
