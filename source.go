// Package xmitcheck carries the module's own source inside the xmitcheck
// binary, so that one installed binary compiles the suites (and, when it is
// not static, the guest's init) from any directory: the runner
// (internal/host/runner) extracts it once into the cache and runs go there.
package xmitcheck

import "embed"

// Source is every package the suites' test binaries and cmd/xmitcheck are
// built from, with go.mod and go.sum: a module root; and lava/, the LAVA
// test definition an installed kselftest collection carries. Whole directories are
// embedded (their few kilobytes of testdata too) so that a new package or
// file cannot be left out; the runner's tests hold it to go list -deps.
//
//go:embed go.mod go.sum source.go cmd internal kernels lava suites vmtest
var Source embed.FS
