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

// TestWorkflowKselftest: a job of the CI workflow runs the collection as
// labs do (make kselftest: the kernel's runner in vng), so that path stays
// tested.
func TestWorkflowKselftest(t *testing.T) {
	data, err := os.ReadFile("../../.github/workflows/ci.yml")
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(data), "\n  kselftest:\n"))
	assert.Check(t, is.Contains(string(data), "run: make kselftest KSELFTEST_KERNELS=debian:7.3\n"))
	mk, err := os.ReadFile("../../Makefile")
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(mk), "./scripts/kselftest.sh $(KSELFTEST_KERNELS)"))
}
