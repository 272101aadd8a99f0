package results

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestConverter feeds raw -test.v=test2json output (go test's framing
// lines start with ^V), cut in odd places, and checks the events and the
// package's own verdict that come out: through go tool test2json, and
// through cmd/test2json built on its own, as an installed kselftest
// collection carries it.
func TestConverter(t *testing.T) {
	built := filepath.Join(t.TempDir(), "test2json")
	build := exec.Command("go", "build", "-o", built, "cmd/test2json")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	assert.NilError(t, err, "%s", out)
	for name, path := range map[string]string{"go tool": "", "built": built} {
		t.Run(name, func(t *testing.T) { testConverter(t, path) })
	}
	_, err = StartConverterWith(filepath.Join(t.TempDir(), "none"), "p", func(Event) {})
	assert.ErrorContains(t, err, "the collection's test2json: install the collection again")
}

func testConverter(t *testing.T, test2json string) {
	const pkg = "example.org/suites/a"
	for _, tc := range []struct {
		name, out string
		want      []string // "action test" of each event but output
		verdict   string
	}{{
		name: "pass",
		out: "\x16=== RUN   TestX\n    x_test.go:9: hello\n\x16--- PASS: TestX (0.00s)\n" +
			"\x16=== RUN   TestY\n\x16--- SKIP: TestY (0.00s)\n\x16PASS\n",
		want:    []string{"start ", "run TestX", "pass TestX", "run TestY", "skip TestY", "pass "},
		verdict: "pass",
	}, {
		name:    "fail",
		out:     "\x16=== RUN   TestX\n    x_test.go:9: bad\n\x16--- FAIL: TestX (0.00s)\n\x16FAIL\n",
		want:    []string{"start ", "run TestX", "fail TestX", "fail "},
		verdict: "fail",
	}, {
		// No verdict of its own: the caller judges the binary by its exit.
		name:    "cut short",
		out:     "\x16=== RUN   TestX\n    x_test.go:9: half a li",
		want:    []string{"start ", "run TestX"},
		verdict: "",
	}, {
		name:    "silent",
		out:     "",
		want:    []string{"start "},
		verdict: "",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			var output strings.Builder
			c, err := StartConverterWith(test2json, pkg, func(e Event) {
				mu.Lock()
				defer mu.Unlock()
				assert.Check(t, is.Equal(e.Package, pkg))
				if e.Action == "output" {
					output.WriteString(e.Output)
					return
				}
				got = append(got, e.Action+" "+e.Test)
			})
			assert.NilError(t, err)
			for p := range slices.Chunk([]byte(tc.out), 7) { // writes cut mid-line
				_, err := c.Write(p)
				assert.NilError(t, err)
			}
			verdict := c.End()
			mu.Lock()
			defer mu.Unlock()
			assert.Check(t, is.DeepEqual(got, tc.want))
			assert.Check(t, is.Equal(verdict, tc.verdict))
			assert.Check(t, !strings.Contains(output.String(), "\x16"), "framing bytes left in %q", output.String())
		})
	}
}
