package main

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestFileKey(t *testing.T) {
	for name, want := range map[string]string{
		"debian:7.3": "debian-7.3", "build:no003": "build-no003",
		"./linux/arch/x86/boot/bzImage": "linux_arch_x86_boot_bzImage", ".": "tree", "./": "tree",
	} {
		assert.Check(t, is.Equal(fileKey(name), want), name)
	}
}
