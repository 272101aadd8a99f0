package kernels

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// normalise turns an extracted package tree (src) into the layout Kernel.Root
// promises (root/boot/vmlinuz-R and root/lib/modules/R/ with modules.dep) and
// returns R. It handles both Debian layouts:
//
//	old:   boot/vmlinuz-R, {usr/,}lib/modules/R/          (5.10, 6.1, 6.12)
//	split: usr/lib/modules/R/{vmlinuz.unsigned,config,System.map} beside the
//	       modules, no modules.dep (7.2, 7.3)
//
// The config and System.map go to root/boot/ in both.
//
// It moves files (src and root must be on one file system), so src is
// consumed.
func normalise(ctx context.Context, src, root string) (string, error) {
	var modDirs []string
	for _, base := range []string{"lib/modules", "usr/lib/modules"} {
		entries, err := os.ReadDir(filepath.Join(src, base))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		for _, e := range entries {
			if e.IsDir() {
				modDirs = append(modDirs, filepath.Join(src, base, e.Name()))
			}
		}
	}
	if len(modDirs) != 1 {
		return "", fmt.Errorf("want one lib/modules/RELEASE directory in the package, found %d: %q", len(modDirs), modDirs)
	}
	modSrc := modDirs[0]
	release := filepath.Base(modSrc)

	image := ""
	for _, c := range []string{
		filepath.Join(src, "boot", "vmlinuz-"+release),
		filepath.Join(modSrc, "vmlinuz.unsigned"),
		filepath.Join(modSrc, "vmlinuz"),
	} {
		if _, err := os.Stat(c); err == nil {
			image = c
			break
		}
	}
	if image == "" {
		return "", fmt.Errorf(
			"no kernel image for %s in the package (looked for boot/vmlinuz-%[1]s and lib/modules/%[1]s/vmlinuz.unsigned)",
			release)
	}
	if err := checkRelease(image, release); err != nil {
		return "", err
	}

	boot := filepath.Join(root, "boot")
	modules := filepath.Join(root, "lib", "modules")
	for _, d := range []string{boot, modules} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	moves := [][2]string{{image, filepath.Join(boot, "vmlinuz-"+release)}}
	for _, f := range []string{"config", "System.map"} {
		for _, p := range []string{filepath.Join(src, "boot", f+"-"+release), filepath.Join(modSrc, f)} {
			if exists(p) {
				moves = append(moves, [2]string{p, filepath.Join(boot, f+"-"+release)})
				break
			}
		}
	}
	moves = append(moves, [2]string{modSrc, filepath.Join(modules, release)})
	for _, m := range moves {
		if err := os.Rename(m[0], m[1]); err != nil {
			return "", err
		}
	}
	return release, ensureDepmod(ctx, root, release)
}

// ensureDepmod runs depmod -b root release unless modules.dep is there. A
// depmod that exits 0 and writes nothing looks for modules elsewhere than
// root/lib/modules (kmod 34 can be built with another module directory).
func ensureDepmod(ctx context.Context, root, release string) error {
	dep := filepath.Join(root, "lib", "modules", release, "modules.dep")
	if exists(dep) {
		return nil
	}
	out, err := exec.CommandContext(ctx, "depmod", "-b", root, release).CombinedOutput()
	var notFound *exec.Error
	switch {
	case errors.As(err, &notFound):
		return fmt.Errorf("%w: install kmod (it provides depmod, which indexes the kernel's modules)", err)
	case err != nil:
		return fmt.Errorf("depmod -b %s %s: %v: %s", root, release, err, bytes.TrimSpace(out))
	case !exists(dep):
		return fmt.Errorf("depmod -b %s %s wrote no %s: use kmod ≤ 33, or one built with /lib/modules", root, release, dep)
	}
	return nil
}

// checkRelease fails when the image at path is not a bzImage of release.
func checkRelease(path, release string) error {
	got, err := bzImageRelease(path)
	if err != nil {
		return err
	}
	if got != release {
		return fmt.Errorf("%s is release %q, not %q: the package or tree is inconsistent", path, got, release)
	}
	return nil
}

// bzImageRelease reads the release (uname -r) out of an x86 bzImage.
//
// The setup header (Documentation/arch/x86/boot.rst) has the magic "HdrS" at
// 0x202, the boot protocol version at 0x206 and, from version 2.00,
// kernel_version at 0x20E: a pointer, minus 0x200, to a NUL-terminated string
// such as "7.3.4+deb13-amd64 (debian-kernel@…) #1 SMP PREEMPT_DYNAMIC …".
func bzImageRelease(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	hdr := make([]byte, 0x210)
	if _, err := f.ReadAt(hdr, 0); err != nil || string(hdr[0x202:0x206]) != "HdrS" {
		return "", fmt.Errorf(
			"%s is not an x86 bzImage (no \"HdrS\" at 0x202): give arch/x86/boot/bzImage or a vmlinuz, not the ELF vmlinux",
			path)
	}
	if binary.LittleEndian.Uint16(hdr[0x206:]) < 0x200 {
		return "", fmt.Errorf("%s has a boot protocol older than 2.00: too old to boot here", path)
	}
	ptr := binary.LittleEndian.Uint16(hdr[0x20E:])
	if ptr == 0 {
		return "", fmt.Errorf("%s has no kernel_version string in its setup header", path)
	}
	buf := make([]byte, 256)
	n, err := f.ReadAt(buf, int64(ptr)+0x200)
	if n == 0 {
		return "", fmt.Errorf("%s: kernel_version at 0x%x: %w", path, int(ptr)+0x200, err)
	}
	s, _, _ := bytes.Cut(buf[:n], []byte{0})
	fields := strings.Fields(string(s))
	if len(fields) == 0 {
		return "", fmt.Errorf("%s has an empty kernel_version string", path)
	}
	return fields[0], nil
}

// countModules counts the module files (.ko, .ko.xz, .ko.zst, .ko.gz) under
// dir, following a symlink at dir itself.
func countModules(dir string) (int, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	err = filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && isModuleFile(d.Name()) {
			n++
		}
		return nil
	})
	return n, err
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
