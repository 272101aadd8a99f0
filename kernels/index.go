package kernels

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// pkg is one stanza of a Debian Packages index, the fields resolution needs.
type pkg struct {
	Name     string
	Version  string
	Filename string // pool/main/l/linux/…deb, relative to the mirror URI
	SHA256   string
	Size     int64
}

// choice is what resolution picked for a series.
type choice struct {
	// Image holds the kernel image. Companions are the other packages of the
	// split packaging, same ABI and version: linux-modules-R (the modules) and
	// linux-base-R (config, System.map, modules.builtin, modules.order).
	Image      pkg
	Companions []pkg
	// Release is the kernel's uname -r, "7.3.4+deb13-amd64".
	Release string
}

// debs lists the packages to download, image first.
func (c choice) debs() []pkg { return append([]pkg{c.Image}, c.Companions...) }

// pick chooses the newest package of the series among a suite's packages
// (by Debian version order), and for the split packaging its companions.
func (s series) pick(pkgs []pkg) (choice, error) {
	re := s.imagePattern()
	var best choice
	found := false
	for _, p := range pkgs {
		m := re.FindStringSubmatch(p.Name)
		if m == nil || (found && compareVersions(p.Version, best.Image.Version) <= 0) {
			continue
		}
		best, found = choice{Image: p, Release: m[1] + "-" + s.flavour}, true
	}
	if !found {
		return choice{}, fmt.Errorf("no %s package in %s's index (want one matching %s): the mirror may have dropped the series; run `xmitcheck kernels` for the catalog", s.Name, s.Suite, re)
	}
	if !s.split {
		return best, nil
	}
	for _, want := range []string{"linux-modules-" + best.Release, "linux-base-" + best.Release} {
		i := slices.IndexFunc(pkgs, func(p pkg) bool { return p.Name == want && p.Version == best.Image.Version })
		if i < 0 {
			return choice{}, fmt.Errorf("%s %s has no %s of the same version in %s's index: the mirror is mid-update, try again later", best.Image.Name, best.Image.Version, want, s.Suite)
		}
		best.Companions = append(best.Companions, pkgs[i])
	}
	return best, nil
}

// readIndex parses a Packages index (deb822 stanzas) and returns the
// stanzas whose package name keep accepts.
func readIndex(r io.Reader, keep func(name string) bool) ([]pkg, error) {
	var (
		out  []pkg
		cur  pkg
		line int
	)
	flush := func() {
		if cur.Name != "" && keep(cur.Name) {
			out = append(out, cur)
		}
		cur = pkg{}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line++
		text := sc.Text()
		if text == "" {
			flush()
			continue
		}
		if text[0] == ' ' || text[0] == '\t' {
			continue // continuation of a multi-line field
		}
		key, value, ok := strings.Cut(text, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: %q is not a field", line, text)
		}
		value = strings.TrimSpace(value)
		switch key {
		case "Package":
			cur.Name = value
		case "Version":
			cur.Version = value
		case "Filename":
			cur.Filename = value
		case "SHA256":
			cur.SHA256 = value
		case "Size":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: Size %q: %w", line, value, err)
			}
			cur.Size = n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	flush()
	return out, nil
}

// indexFileRE matches apt's name for a suite's main amd64 Packages file in
// its lists directory (the URI with '/' turned into '_'), compressed or not.
var indexFileRE = regexp.MustCompile(`_dists_([^_]+)_main_binary-amd64_Packages(\.gz|\.xz|\.zst)?$`)

// loadSuite reads the kernel packages of suite from the Packages files apt
// left in listsDir.
func loadSuite(listsDir, suite string) ([]pkg, error) {
	entries, err := os.ReadDir(listsDir)
	if err != nil {
		return nil, err
	}
	var out []pkg
	seen := false
	for _, e := range entries {
		m := indexFileRE.FindStringSubmatch(e.Name())
		if m == nil || m[1] != suite {
			continue
		}
		seen = true
		path := filepath.Join(listsDir, e.Name())
		pkgs, err := readIndexFile(path, m[2])
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		out = append(out, pkgs...)
	}
	if !seen {
		return nil, fmt.Errorf("no Packages index for %s in %s", suite, listsDir)
	}
	return out, nil
}

func readIndexFile(path, ext string) ([]pkg, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	switch ext {
	case ".gz":
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		r = zr
	case ".xz":
		zr, err := xz.NewReader(bufio.NewReader(f))
		if err != nil {
			return nil, err
		}
		r = zr
	case ".zst":
		zr, err := zstd.NewReader(f)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	}
	return readIndex(r, isKernelPackage)
}

// isKernelPackage keeps the stanzas resolution may need; the rest of a
// 60 MB index is skipped.
func isKernelPackage(name string) bool {
	return strings.HasPrefix(name, "linux-image-") ||
		strings.HasPrefix(name, "linux-binary-unsigned-") ||
		strings.HasPrefix(name, "linux-modules-") ||
		strings.HasPrefix(name, "linux-base-") ||
		strings.HasPrefix(name, "linux-source-")
}
