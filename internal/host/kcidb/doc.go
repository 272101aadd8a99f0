// Package kcidb writes kernels' results (the snapshots of a matrix folder's
// results.json) as a KCIDB report, the JSON that KernelCI's database takes
// (kernelci/kcidb-io, schema v5): per kernel a checkout and a build, and
// under the build a test per seed verdict, per feature miss and per test.
// testdata holds the schema the tests validate the report against.
package kcidb
