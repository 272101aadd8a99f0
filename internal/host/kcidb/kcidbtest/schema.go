// Package kcidbtest holds what tests of KCIDB output share: the schema in
// the tree, compiled as kcidb-io validates with it.
package kcidbtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gotest.tools/v3/assert"
)

// SchemaFile is the KCIDB I/O schema (kcidb-io v5.3) in the tree.
func SchemaFile() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "testdata", "kcidb-io.schema.v5.3.json")
}

// Schema compiles the KCIDB schema as kcidb-io validates it: draft-07,
// formats asserted.
func Schema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	path := SchemaFile()
	f, err := os.Open(path)
	assert.NilError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	assert.NilError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.AssertFormat()
	assert.NilError(t, c.AddResource(path, doc))
	s, err := c.Compile(path)
	assert.NilError(t, err)
	return s
}
