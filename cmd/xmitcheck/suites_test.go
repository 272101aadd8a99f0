package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/host/report"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels"
)

// TestSuitesOutsideCheckout is what an installed xmitcheck does in a
// kernel tree: no go.mod around, no -C, and the suites still compile,
// from the source built into it, by a relative path or an import path.
func TestSuitesOutsideCheckout(t *testing.T) {
	pkgs := []string{"./internal/splat", runner.Module + "/internal/heartbeat"}
	if !testing.Short() {
		pkgs = append(pkgs, "./suites/tun") // every guest package: about a minute on 2 loaded cores
	}
	// A cache of its own, but Go's build cache (under XDG_CACHE_HOME too,
	// by default) stays where it is, warm.
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	assert.NilError(t, err)
	cache := t.TempDir()
	out := filepath.Join(t.TempDir(), "bins")
	cmd := exec.Command(xmitcheck, append([]string{"suites", "build", "-o", out}, pkgs...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, "GOCACHE="+strings.TrimSpace(string(gocache)))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	assert.NilError(t, err, "stderr: %s", stderr.String())
	assert.Check(t, is.Contains(stderr.String(), "building the suites from embedded sha256:"))
	assert.Check(t, is.Contains(stderr.String(), filepath.Join(cache, "xmitcheck", "suites")))
	for _, p := range pkgs {
		imp := p
		if rel, ok := strings.CutPrefix(p, "./"); ok {
			imp = runner.Module + "/" + rel
		}
		assert.Check(t, is.Contains(string(stdout), imp+"\t"), "stdout: %s", stdout)
		bin := filepath.Join(out, path.Base(p)+".test")
		assert.Check(t, runner.Static(bin), "%s is not a static executable", bin)
	}
}

// TestRevisionInMatrix: each kernel's entry of a matrix's results.json
// says which xmitcheck and which suites' source gave it, as fields, which
// report still reads.
func TestRevisionInMatrix(t *testing.T) {
	k := &kernels.Kernel{Name: "debian:7.3", Release: "7.3.4"}
	r := results.NewRun(k.Label())
	r.Name = k.Name
	r.Finish(nil)
	out := filepath.Join(t.TempDir(), "m")
	assert.NilError(t, writeMatrix(out, []*kernels.Kernel{k}, []*results.Run{r}, nil, "embedded sha256:0123456789ab"))
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	assert.NilError(t, err)
	var entries []struct{ Kernel, Xmitcheck, Suites string }
	assert.NilError(t, json.Unmarshal(data, &entries))
	assert.Assert(t, is.Len(entries, 1))
	assert.Check(t, is.Equal(entries[0].Xmitcheck, runner.Version()))
	assert.Check(t, is.Equal(entries[0].Suites, "embedded sha256:0123456789ab"))
	snaps, err := report.Load(out)
	assert.NilError(t, err)
	assert.Check(t, is.Len(snaps, 1))
}

// TestRevisionInComparison: compare's Markdown reply and JSON say which
// xmitcheck and which suites ran.
func TestRevisionInComparison(t *testing.T) {
	c := comparison{Base: "debian:7.2", Patched: "debian:7.3", Xmitcheck: "xmitcheck v1.2.3",
		Suites: "checkout /src/xmitcheck at v1.2.3-4-g0123456789ab-dirty"}
	var md strings.Builder
	assert.NilError(t, writeMarkdown(&md, c, nil))
	assert.Check(t, is.Contains(md.String(),
		"(xmitcheck v1.2.3; suites: checkout /src/xmitcheck at v1.2.3-4-g0123456789ab-dirty)"))
	data, err := json.Marshal(c)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(data), `"Suites":"checkout /src/xmitcheck at v1.2.3-4-g0123456789ab-dirty"`))
}
