package debian

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/xmitcheck/xmitcheck/kernels/internal/cachefile"
)

// debianSources is the machine's deb822 source list: the mirror URI is read
// from it at run time and never written into the code. A variable for the
// tests only.
var debianSources = "/etc/apt/sources.list.d/debian.sources"

// defaultKeyring verifies the mirror's Release files when the source does not
// name its own Signed-By keyring.
const defaultKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg"

// indexMaxAge is how long a suite's package index is used before apt-get
// update runs again.
const indexMaxAge = time.Hour

// mirror is where Debian's packages come from, as the machine's apt source
// says.
type mirror struct {
	URI     string
	Keyring string
}

// readMirror returns the first non-security source of a deb822 sources file.
func readMirror(path string) (mirror, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		// The catalog's kernels come from the machine's own Debian source; a
		// machine without one can still boot a kernel given by path.
		return mirror{}, fmt.Errorf("reading the Debian mirror from %s: %w: debian:* kernels need a Debian apt source",
			path, err)
	}
	for _, stanza := range strings.Split(string(data), "\n\n") {
		fields := map[string]string{}
		sc := bufio.NewScanner(strings.NewReader(stanza))
		for sc.Scan() {
			key, value, ok := strings.Cut(sc.Text(), ":")
			if ok && !strings.HasPrefix(key, "#") && !strings.HasPrefix(key, " ") {
				fields[key] = strings.TrimSpace(value)
			}
		}
		uris := strings.Fields(fields["URIs"])
		if len(uris) == 0 || isSecurity(uris[0], fields["Suites"]) {
			continue
		}
		m := mirror{URI: uris[0], Keyring: fields["Signed-By"]}
		if m.Keyring == "" || strings.Contains(m.Keyring, "\n") || !strings.HasPrefix(m.Keyring, "/") {
			m.Keyring = defaultKeyring
		}
		return m, nil
	}
	return mirror{}, fmt.Errorf("no Debian mirror in %s: it needs a \"URIs:\" line that is not the security archive", path)
}

func isSecurity(uri, suites string) bool {
	if strings.HasSuffix(strings.TrimRight(uri, "/"), "-security") {
		return true
	}
	for _, s := range strings.Fields(suites) {
		if !strings.HasSuffix(s, "-security") {
			return false
		}
	}
	return suites != ""
}

// Index is a private apt configuration and state for one suite under the
// cache directory; the system's sources, lists and status are never read or
// written. One suite per state keeps every update and download small.
type Index struct {
	dir   string // CacheDir/apt/SUITE
	suite string
}

// NewIndex is the index of suite in the kernel cache at cacheDir.
func NewIndex(cacheDir, suite string) Index {
	return Index{dir: filepath.Join(cacheDir, "apt", suite), suite: suite}
}

// Lock creates the index's directory and locks it against other
// xmitchecks until unlock.
func (a Index) Lock(ctx context.Context, progress io.Writer) (unlock func(), err error) {
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return nil, err
	}
	return cachefile.Lock(ctx, a.dir+".lock", "the "+a.suite+" package index", progress)
}

// Update runs apt-get update against the machine's Debian mirror.
func (a Index) Update(ctx context.Context) error {
	m, err := readMirror(debianSources)
	if err != nil {
		return err
	}
	return a.update(ctx, m)
}

func (a Index) listsDir() string { return filepath.Join(a.dir, "lists") }
func (a Index) stamp() string    { return filepath.Join(a.dir, "updated") }

// sourcesLine is the one line of the private sources.list. Validity is not
// checked: the machine's mirror may be a snapshot, and the signature still is.
func (a Index) sourcesLine(m mirror) string {
	return fmt.Sprintf("deb [arch=amd64 signed-by=%s check-valid-until=no] %s %s main\n", m.Keyring, m.URI, a.suite)
}

// args are the options that make apt-get and apt-cache use only this
// state.
func (a Index) args() []string {
	opts := []string{
		"Dir::Etc::SourceList=" + filepath.Join(a.dir, "sources.list"),
		"Dir::Etc::SourceParts=/dev/null",
		"Dir::State::Lists=" + a.listsDir(),
		"Dir::State::status=/dev/null",
		"Dir::Cache=" + filepath.Join(a.dir, "cache"),
		// apt-cache reads the suite's index once into this cache and maps it
		// afterwards, whatever the system's apt.conf.d says (Docker's images
		// turn the cache off).
		"Dir::Cache::pkgcache=pkgcache.bin",
		"Dir::Cache::srcpkgcache=",
		"APT::Architecture=amd64",
		"APT::Architectures::=amd64",
		"APT::Sandbox::User=root",
		"Acquire::Languages=none",
		"Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false",
		"Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false",
		// Keep Packages compressed: a fifth of the disk.
		"Acquire::GzipIndexes=true",
		"Acquire::IndexTargets::deb::Packages::KeepCompressedAs=gz",
	}
	var out []string
	for _, o := range opts {
		out = append(out, "-o", o)
	}
	return append(out, "-q")
}

// fresh says whether the suite's index was updated within indexMaxAge.
func (a Index) fresh() bool {
	st, err := os.Stat(a.stamp())
	return err == nil && time.Since(st.ModTime()) < indexMaxAge
}

// update writes the sources.list and runs apt-get update.
func (a Index) update(ctx context.Context, m mirror) error {
	if err := a.init(m); err != nil {
		return err
	}
	// --error-on=any: a source that cannot be fetched fails the update
	// (apt-get only warns by default), so the stamp never covers one.
	if _, err := a.run(ctx, "apt-get", "", "update", "--error-on=any"); err != nil {
		return fmt.Errorf("updating the package index of %s: %w", a.suite, err)
	}
	now := time.Now()
	if err := os.WriteFile(a.stamp(), nil, 0o644); err != nil {
		return err
	}
	return os.Chtimes(a.stamp(), now, now)
}

// init creates the state's directories and its sources.list.
func (a Index) init(m mirror) error {
	for _, d := range []string{
		filepath.Join(a.listsDir(), "partial"),
		filepath.Join(a.dir, "cache", "archives", "partial"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(a.dir, "sources.list"), []byte(a.sourcesLine(m)), 0o644)
}

// download fetches the packages into dir with apt-get download, pinned to
// the exact versions resolution chose.
func (a Index) download(ctx context.Context, dir string, pkgs []Package) error {
	_, err := a.run(ctx, "apt-get", dir, "download", pinned(pkgs)...)
	return err
}

func pinned(pkgs []Package) []string {
	var out []string
	for _, p := range pkgs {
		out = append(out, p.Name+"="+p.Version)
	}
	return out
}

// run runs apt-get or apt-cache on this state in dir, returns its standard
// output and turns a failure into one line: apt's own error.
func (a Index) run(ctx context.Context, tool, dir, command string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, tool, append(append(a.args(), command), args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var notFound *exec.Error
	if errors.As(err, &notFound) {
		return nil, fmt.Errorf("%w: install apt (it resolves and fetches the Debian kernels)", err)
	}
	return nil, fmt.Errorf("%s %s: %v: %s", tool, command, err, lastAptError(append(out, stderr.Bytes()...)))
}

// lastAptError picks apt's "E:" lines out of its output, or its last line.
func lastAptError(out []byte) string {
	var errs []string
	last := ""
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		s := strings.TrimSpace(string(l))
		if strings.HasPrefix(s, "E:") || strings.HasPrefix(s, "Err:") {
			errs = append(errs, s)
		}
		if s != "" {
			last = s
		}
	}
	if len(errs) > 0 {
		return strings.Join(errs, "; ")
	}
	return last
}
