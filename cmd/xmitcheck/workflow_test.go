package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestWorkflowMatrix holds the CI workflow's matrix to the kernels
// `xmitcheck matrix` runs by default: the catalog's and the host.
func TestWorkflowMatrix(t *testing.T) {
	data, err := os.ReadFile("../../.github/workflows/ci.yml")
	assert.NilError(t, err)
	m := regexp.MustCompile(`(?s)\n\s+kernel: \[([^\]]*)\]`).FindSubmatch(data)
	assert.Assert(t, m != nil, "ci.yml has no matrix of kernels")
	var got []string
	for _, k := range strings.Split(string(m[1]), ",") {
		got = append(got, strings.TrimSpace(k))
	}
	assert.Check(t, is.DeepEqual(got, matrixKernels()))
}
