package debian

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestPickFromRecordedIndex resolves every catalog name with apt against
// the recorded Packages indexes in testdata/index.
func TestPickFromRecordedIndex(t *testing.T) {
	for _, tc := range []struct {
		name, image, version, release string
		companions                    []string
	}{
		// 5.10.0-30 (5.10.218-1) is older; cloud and rt flavours must not win.
		{"debian:5.10", "linux-image-5.10.0-32-amd64-unsigned", "5.10.223-1", "5.10.0-32-amd64", nil},
		{"debian:6.1", "linux-image-6.1.0-50-amd64-unsigned", "6.1.176-1", "6.1.0-50-amd64", nil},
		// 117 > 107 as numbers.
		{"debian:6.12", "linux-image-6.12.117+deb13-amd64-unsigned", "6.12.117-1", "6.12.117+deb13-amd64", nil},
		{"debian:7.2", "linux-binary-unsigned-7.2.13+deb14-amd64", "7.2.13-1", "7.2.13+deb14-amd64",
			[]string{"linux-modules-7.2.13+deb14-amd64", "linux-base-7.2.13+deb14-amd64"}},
		{"debian:7.3", "linux-binary-unsigned-7.3.4+deb13-amd64", "7.3.4-1~bpo13+1", "7.3.4+deb13-amd64",
			[]string{"linux-modules-7.3.4+deb13-amd64", "linux-base-7.3.4+deb13-amd64"}},
		// The flavours: the same series, their own packages.
		{"debian:6.12-rt", "linux-image-6.12.117+deb13-rt-amd64-unsigned", "6.12.117-1", "6.12.117+deb13-rt-amd64", nil},
		{"debian:6.12-cloud", "linux-image-6.12.117+deb13-cloud-amd64-unsigned",
			"6.12.117-1", "6.12.117+deb13-cloud-amd64", nil},
		{"debian:7.2-rt", "linux-binary-unsigned-7.2.13+deb14-rt-amd64", "7.2.13-1", "7.2.13+deb14-rt-amd64",
			[]string{"linux-modules-7.2.13+deb14-rt-amd64", "linux-base-7.2.13+deb14-rt-amd64"}},
		{"debian:7.2-cloud", "linux-binary-unsigned-7.2.13+deb14-cloud-amd64", "7.2.13-1", "7.2.13+deb14-cloud-amd64",
			[]string{"linux-modules-7.2.13+deb14-cloud-amd64", "linux-base-7.2.13+deb14-cloud-amd64"}},
		{"debian:7.3-rt", "linux-binary-unsigned-7.3.4+deb13-rt-amd64", "7.3.4-1~bpo13+1", "7.3.4+deb13-rt-amd64",
			[]string{"linux-modules-7.3.4+deb13-rt-amd64", "linux-base-7.3.4+deb13-rt-amd64"}},
		{"debian:7.3-cloud", "linux-binary-unsigned-7.3.4+deb13-cloud-amd64", "7.3.4-1~bpo13+1", "7.3.4+deb13-cloud-amd64",
			[]string{"linux-modules-7.3.4+deb13-cloud-amd64", "linux-base-7.3.4+deb13-cloud-amd64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := Lookup(tc.name)
			assert.Assert(t, ok)
			c, err := s.pick(context.Background(), recordedState(t, s.Suite))
			assert.NilError(t, err)
			assert.Check(t, is.Equal(c.Image.Name, tc.image))
			assert.Check(t, is.Equal(c.Image.Version, tc.version))
			assert.Check(t, is.Equal(c.Release, tc.release))
			var got []string
			for _, p := range c.Companions {
				got = append(got, p.Name)
				assert.Check(t, is.Equal(p.Version, tc.version), "%s", p.Name)
			}
			assert.Check(t, is.DeepEqual(got, tc.companions))
			for _, p := range c.Debs() {
				pool := "pool/main/l/linux/" + p.Name + "_"
				assert.Check(t, strings.HasPrefix(p.Filename, pool), "%s: Filename %q", p.Name, p.Filename)
				assert.Check(t, is.Len(p.SHA256, 64), "%s", p.Name)
				assert.Check(t, p.Size > 0, "%s", p.Name)
			}
		})
	}
}

// TestPickSplitNewestOfSeveral picks the 7.2 series out of trixie-backports,
// which holds 7.2.6, 7.2.9, 7.2.11 and 7.2.12 (7.2.9 sorts last as a string).
func TestPickSplitNewestOfSeveral(t *testing.T) {
	s := Series{Name: "test:7.2", Suite: "trixie-backports", Upstream: "7.2", Flavour: "amd64", Split: true}
	a := recordedState(t, s.Suite)
	c, err := s.pick(context.Background(), a)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(c.Image.Name, "linux-binary-unsigned-7.2.12+deb13-amd64"))
	assert.Check(t, is.Equal(c.Image.Version, "7.2.12-1~bpo13+1"))
	assert.Check(t, is.Len(c.Companions, 2))

	// The recorded SHA256 and size of the 7.3 image, as the index has them.
	s73, _ := Lookup("debian:7.3")
	c73, err := s73.pick(context.Background(), a)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(c73.Image.SHA256, "f7192653d0b077ddb7059842822a9f4dc28395ec9e5fd2fc31064cc3b1ed3edb"))
	assert.Check(t, is.Equal(c73.Image.Size, int64(14136960)))
}

func TestPickErrors(t *testing.T) {
	ctx := context.Background()
	s73, _ := Lookup("debian:7.3")
	_, err := s73.pick(ctx, recordedState(t, "trixie-backports", "linux-base-7.3.4+deb13-amd64"))
	assert.ErrorContains(t, err, "has no linux-base-7.3.4+deb13-amd64 of the same version")

	// bookworm has no 7.3 at all; buster has no index.
	_, err = s73.pick(ctx, recordedState(t, "bookworm"))
	assert.ErrorContains(t, err, "no debian:7.3 package in bookworm's index")
	_, err = s73.pick(ctx, recordedState(t, "buster"))
	assert.ErrorContains(t, err, "no debian:7.3 package in buster's index")
}

func TestNewerVersion(t *testing.T) {
	needApt(t)
	for _, tc := range []struct {
		a, b  string
		newer bool
	}{
		{"6.12.117-1", "6.12.107-1", true},
		{"7.3.4-1~bpo13+1", "7.3.4-1", false},
		{"7.2.12-1~bpo13+1", "7.2.9-1~bpo13+1", true},
		{"7.2.13-1", "7.2.13-1", false},
	} {
		got, err := newerVersion(context.Background(), tc.a, tc.b)
		assert.Check(t, err)
		assert.Check(t, got == tc.newer, "%s newer than %s: %v", tc.a, tc.b, got)
	}
	_, err := newerVersion(context.Background(), "not a version!", "1")
	assert.Check(t, is.ErrorContains(err, "dpkg --compare-versions"))
}

// recordedState is a private apt state for suite whose lists are the
// recorded indexes of testdata/index, without the stanzas of the packages
// named in drop; apt reads them as they are, nothing is fetched.
func recordedState(t *testing.T, suite string, drop ...string) Index {
	t.Helper()
	needApt(t)
	m, err := readMirror("testdata/debian.sources")
	assert.NilError(t, err)
	a := Index{dir: t.TempDir(), suite: suite}
	assert.NilError(t, a.init(m))
	paths, err := filepath.Glob("testdata/index/*_dists_" + suite + "_main_binary-amd64_Packages*")
	assert.NilError(t, err)
	for _, path := range paths {
		f, err := os.Open(path)
		assert.NilError(t, err)
		defer f.Close()
		var r io.Reader = f
		if strings.HasSuffix(path, ".gz") {
			r, err = gzip.NewReader(f)
			assert.NilError(t, err)
		}
		data, err := io.ReadAll(r)
		assert.NilError(t, err)
		var kept []string
		for _, stanza := range strings.Split(string(data), "\n\n") {
			name := regexp.MustCompile(`(?m)^Package: (\S+)$`).FindStringSubmatch(stanza)
			if name == nil || !slices.Contains(drop, name[1]) {
				kept = append(kept, stanza)
			}
		}
		out := filepath.Join(a.listsDir(), strings.TrimSuffix(filepath.Base(path), ".gz"))
		assert.NilError(t, os.WriteFile(out, []byte(strings.Join(kept, "\n\n")), 0o644))
	}
	return a
}

func needApt(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"apt-cache", "apt-get", "dpkg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found (%v): xmitcheck resolves Debian kernels with apt and dpkg", tool, err)
		}
	}
}

func TestReadMirror(t *testing.T) {
	m, err := readMirror("testdata/debian.sources")
	assert.NilError(t, err)
	want := mirror{URI: "http://mirror.invalid/debian", Keyring: "/usr/share/keyrings/test-keyring.gpg"}
	assert.Check(t, is.DeepEqual(m, want))

	a := Index{dir: "/cache/apt/trixie-backports", suite: "trixie-backports"}
	assert.Check(t, is.Equal(a.sourcesLine(m),
		"deb [arch=amd64 signed-by=/usr/share/keyrings/test-keyring.gpg check-valid-until=no] "+
			"http://mirror.invalid/debian trixie-backports main\n"))
	assert.Check(t, is.Contains(strings.Join(a.args(), " "), "Dir::State::Lists=/cache/apt/trixie-backports/lists"))

	_, err = readMirror("testdata/index/mirror.invalid_debian_dists_sid_main_binary-amd64_Packages")
	assert.ErrorContains(t, err, "no Debian mirror in")
	_, err = readMirror("testdata/nonexistent.sources")
	assert.ErrorContains(t, err, "reading the Debian mirror")
}

// TestPickFromIndexFreshness: an index younger than an hour is used as is;
// an older one whose update fails (here: the machine's source list cannot be
// read, so nothing reaches the network) is used with a note.
func TestPickFromIndexFreshness(t *testing.T) {
	a := recordedState(t, "trixie-backports")
	s73, _ := Lookup("debian:7.3")
	defer func(path string) { debianSources = path }(debianSources)
	debianSources = "testdata/nonexistent.sources"

	assert.NilError(t, os.WriteFile(a.stamp(), nil, 0o644))
	var progress bytes.Buffer
	c, err := a.Pick(context.Background(), s73, &progress)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(c.Image.Version, "7.3.4-1~bpo13+1"))
	assert.Check(t, is.Equal(progress.String(), ""), "a fresh index was updated")

	old := time.Now().Add(-2 * time.Hour)
	assert.NilError(t, os.Chtimes(a.stamp(), old, old))
	c, err = a.Pick(context.Background(), s73, &progress)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(c.Image.Version, "7.3.4-1~bpo13+1"))
	assert.Check(t, is.Contains(progress.String(), "updating the package index of trixie-backports…"))
	assert.Check(t, is.Contains(progress.String(), "using the older index"))

	// No index at all and no update: the update's error.
	empty := recordedState(t, "buster")
	_, err = empty.Pick(context.Background(), s73, nil)
	assert.Check(t, is.ErrorContains(err, "reading the Debian mirror from testdata/nonexistent.sources"))
}
