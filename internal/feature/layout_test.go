package feature

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

const module = "github.com/xmitcheck/xmitcheck"

// layoutRow matches a package's row of docs/layout.md: | `path` | side | holds |.
var layoutRow = regexp.MustCompile("^\\| `([^`]+)` \\| (host|guest|contract|shared) \\|")

// sides reads docs/layout.md: each package's side.
func sides(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "layout.md"))
	assert.NilError(t, err)
	defer f.Close()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if m := layoutRow.FindStringSubmatch(s.Text()); m != nil {
			out[m[1]] = m[2]
		}
	}
	assert.NilError(t, s.Err())
	return out
}

type goPackage struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
}

// packages lists the module's packages with their imports.
func packages(t *testing.T) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	assert.NilError(t, err, "go list")
	var pkgs []goPackage
	for d := json.NewDecoder(strings.NewReader(string(out))); d.More(); {
		var p goPackage
		assert.NilError(t, d.Decode(&p))
		p.ImportPath = strings.TrimPrefix(p.ImportPath, module+"/")
		if p.ImportPath == module {
			p.ImportPath = "." // the module root's package
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestLayout holds docs/layout.md to the tree (one row per package, no
// row for a package that is gone) and every package to its side: host and
// guest never import each other; the contract and the shared packages
// import only the standard library, never package testing.
func TestLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	side := sides(t)
	var listed []string
	for _, p := range packages(t) {
		listed = append(listed, p.ImportPath)
		s, ok := side[p.ImportPath]
		if !ok {
			t.Errorf("%s has no row in docs/layout.md", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if _, ok := strings.CutPrefix(imp, module+"/"); (s == "contract" || s == "shared") && (ok || imp == "testing") {
				t.Errorf("%s (%s) imports %s: it may import only the standard library", p.ImportPath, s, imp)
			}
		}
		// The suites are test files only: their imports are test imports.
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			own, ok := strings.CutPrefix(imp, module+"/")
			if ok && (s == "host" && side[own] == "guest" || s == "guest" && side[own] == "host") {
				t.Errorf("%s (%s) imports %s (%s): the two sides meet only in the contract", p.ImportPath, s, own, side[own])
			}
		}
	}
	for p := range side {
		assert.Check(t, is.Contains(listed, p), "docs/layout.md lists %s, which is not a package", p)
	}
	assert.Check(t, slices.Contains(listed, "internal/feature"))
}

// mdLink matches a relative Markdown link target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)

// TestDocs holds the README to a page a newcomer reads in two minutes (at
// most 100 lines: the manual is docs/) and every relative link of the
// README and docs/ to a file or folder that exists.
func TestDocs(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	assert.NilError(t, err)
	lines := strings.Count(string(readme), "\n")
	assert.Check(t, lines <= 100, "README.md has %d lines: move the manual's parts to docs/", lines)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	assert.NilError(t, err)
	for _, page := range append(pages, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(page)
		assert.NilError(t, err)
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			_, err := os.Stat(filepath.Join(filepath.Dir(page), m[1]))
			assert.Check(t, err, "%s links to %s", page, m[1])
		}
	}
}

// suiteDocLines is how long a suite's doc.go may be: a short map, the
// detail in docs/suites.md.
const suiteDocLines = 20

// filesItem matches an item of a suite doc's "# Files" list: the files it
// names (comma-separated), a colon, what they hold.
var filesItem = regexp.MustCompile(`^([a-z0-9_]+\.go(?:, [a-z0-9_]+\.go)*): \S`)

// listedFiles reads the items of a "# Files" list: each starts with
// "//   - " and may go on in lines that start with "//     ".
func listedFiles(list string) []string {
	var items []string
	for _, l := range strings.Split(list, "\n") {
		if item, ok := strings.CutPrefix(l, "//   - "); ok {
			items = append(items, item)
		} else if more, ok := strings.CutPrefix(l, "//     "); ok && len(items) > 0 {
			items[len(items)-1] += " " + more
		}
	}
	var listed []string
	for _, item := range items {
		if m := filesItem.FindStringSubmatch(item); m != nil {
			listed = append(listed, strings.Split(m[1], ", ")...)
		}
	}
	slices.Sort(listed)
	return listed
}

// suitePageItem matches an item of a suite's "### Files" list in
// docs/suites.md: - `file.go`: what it holds.
var suitePageItem = regexp.MustCompile("^- `([a-z0-9_]+\\.go)`: \\S")

// suitePageFiles reads docs/suites.md: the files each suite's section
// lists, by the suite's directory name.
func suitePageFiles(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "suites.md"))
	assert.NilError(t, err)
	out := map[string][]string{}
	suite := ""
	for _, l := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(l, "## suites/"); ok {
			suite = name
			out[suite] = []string{}
		} else if m := suitePageItem.FindStringSubmatch(l); m != nil && suite != "" {
			out[suite] = append(out[suite], m[1])
		}
	}
	for _, files := range out {
		slices.Sort(files)
	}
	return out
}

// TestSuiteDocsListFiles holds each suite's doc.go to one form of "where
// to look", short: at most suiteDocLines lines, ending in a "# Files"
// section that names every Go file of the package (but doc.go and the
// generated *_bpfel.go) once, a few to an item, and no file that is gone;
// and docs/suites.md to a section per suite that lists the same files.
func TestSuiteDocsListFiles(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "suites", "*", "doc.go"))
	assert.NilError(t, err)
	assert.Assert(t, len(dirs) > 0)
	page := suitePageFiles(t)
	for _, doc := range dirs {
		dir := filepath.Dir(doc)
		b, err := os.ReadFile(doc)
		assert.NilError(t, err)
		n := strings.Count(string(b), "\n")
		assert.Check(t, n <= suiteDocLines, "%s has %d lines, want at most %d: move the detail to docs/suites.md",
			doc, n, suiteDocLines)
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		assert.NilError(t, err)
		var want []string
		for _, f := range files {
			if f = filepath.Base(f); f != "doc.go" && !strings.HasSuffix(f, "_bpfel.go") {
				want = append(want, f)
			}
		}
		name := filepath.Base(dir)
		assert.Check(t, is.DeepEqual(page[name], want), "docs/suites.md: suites/%s's files against the package's", name)
		delete(page, name)
		_, list, ok := strings.Cut(string(b), "\n// # Files\n//\n")
		if !ok {
			t.Errorf("%s has no \"# Files\" section", doc)
			continue
		}
		assert.Check(t, is.DeepEqual(listedFiles(list), want), "%s: the # Files list against the package's files", doc)
	}
	for name := range page {
		t.Errorf("docs/suites.md has a section for suites/%s, which is not a suite", name)
	}
}
