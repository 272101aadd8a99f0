// Package kernels is the catalog of kernels xmitcheck runs on and their
// resolution: a name (a catalog kernel, host, a path, build:NAME) becomes a
// Kernel whose files sit in a private cache where a VM (native or
// virtme-ng) expects them, with the modules a guest needs. Debian's
// packages are kernels/debian's; builds from source are kernels/kbuild's.
//
// It knows nothing about qemu or tests.
package kernels

// Kernel is one resolved, ready-to-boot kernel.
//
// Root holds the normalised layout, the one virtme-ng expects:
//
//	Root/boot/vmlinuz-Release
//	Root/lib/modules/Release/   (with modules.dep)
type Kernel struct {
	// Name is what the user asked for: "debian:7.3", "host" or a path.
	Name string
	// Release is the kernel's uname -r.
	Release string
	// Root is the directory with boot/ and lib/modules/; empty for Host.
	Root string
	// Vmlinuz is the bootable image.
	Vmlinuz string
	// ModulesDir is Root/lib/modules/Release, or empty when every option
	// the suites need is built in.
	ModulesDir string
	// Package and PackageVersion record the Debian package the kernel came
	// from ("linux-image-6.1.0-37-amd64-unsigned", "6.1.140-1"); empty for
	// local kernels.
	Package        string
	PackageVersion string
	// Host is true for the running kernel: tests run without a VM.
	Host bool
}

// Label is how results name the kernel: the catalog name with the exact
// package version when there is one.
func (k *Kernel) Label() string {
	if k.PackageVersion != "" {
		return k.Name + " (" + k.PackageVersion + ")"
	}
	if k.Release != "" && k.Release != k.Name {
		return k.Name + " (" + k.Release + ")"
	}
	return k.Name
}
