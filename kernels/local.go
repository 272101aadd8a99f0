package kernels

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/xmitcheck/xmitcheck/kernels/internal/cachefile"
)

// localKernel is a kernel given as a path, before it is normalised.
type localKernel struct {
	image   string // absolute path of the bzImage
	release string
	// modules is a lib/modules/RELEASE directory, or a kernel tree whose
	// modules.order lists its built modules (tree is then true), or "".
	modules string
	tree    bool
}

// inspectLocal reads what a path holds: a bzImage/vmlinuz file (with
// opts.Modules) or a built kernel tree (arch/x86/boot/bzImage, its release
// in include/config/kernel.release, and modules from opts.Modules, an
// installed lib/modules/RELEASE in the tree, or the tree's modules.order;
// none of these means everything is built in).
func inspectLocal(name, modules string) (localKernel, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return localKernel{}, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return localKernel{}, fmt.Errorf(
			"kernel path %q does not exist: give a bzImage/vmlinuz file, a built kernel tree, or one of %s",
			name, validNames())
	}
	var lk localKernel
	if st.IsDir() {
		lk.image = filepath.Join(abs, "arch", "x86", "boot", "bzImage")
		if !exists(lk.image) {
			return localKernel{}, fmt.Errorf(
				"%s is not a built kernel tree: it has no arch/x86/boot/bzImage (run make, or give the bzImage itself)", name)
		}
		data, err := os.ReadFile(filepath.Join(abs, "include", "config", "kernel.release"))
		if err != nil {
			return localKernel{}, fmt.Errorf("%s is not a built kernel tree: %w (run make)", name, err)
		}
		lk.release = strings.TrimSpace(string(data))
		if err := checkRelease(lk.image, lk.release); err != nil {
			return localKernel{}, fmt.Errorf("%w: rebuild the tree (make)", err)
		}
		installed := filepath.Join(abs, "lib", "modules", lk.release)
		switch {
		case modules != "":
		case exists(filepath.Join(installed, "modules.dep")):
			lk.modules = installed
		case nonEmpty(filepath.Join(abs, "modules.order")):
			lk.modules, lk.tree = abs, true
		}
	} else {
		lk.image = abs
		if lk.release, err = bzImageRelease(abs); err != nil {
			return localKernel{}, err
		}
	}
	if modules != "" {
		if lk.modules, err = filepath.Abs(modules); err != nil {
			return localKernel{}, err
		}
		if st, err := os.Stat(lk.modules); err != nil || !st.IsDir() {
			return localKernel{}, fmt.Errorf("modules directory %q does not exist: give the kernel's lib/modules/%s",
				modules, lk.release)
		}
		if filepath.Base(lk.modules) != lk.release {
			return localKernel{}, fmt.Errorf("modules directory %s is for release %q but %s is %q: give lib/modules/%[4]s",
				modules, filepath.Base(lk.modules), name, lk.release)
		}
	}
	return lk, nil
}

// resolveLocal normalises a kernel given as a path into a cache entry whose
// files link back to it. The entry is rebuilt on every call, so a rebuilt
// tree is always seen as it is now.
func resolveLocal(ctx context.Context, name string, opts Options) (*Kernel, error) {
	lk, err := inspectLocal(name, opts.Modules)
	if err != nil {
		return nil, err
	}
	dir, err := opts.cacheDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the kernel cache: %w", err)
	}
	sum := sha256.Sum256([]byte(lk.image + "\x00" + lk.modules))
	key := "local-" + hex.EncodeToString(sum[:6])
	unlock, err := cachefile.Lock(ctx, filepath.Join(dir, key+".lock"), name, opts.Progress)
	if err != nil {
		return nil, err
	}
	defer unlock()
	removeLeftovers(dir, key)

	tmp, err := os.MkdirTemp(dir, "."+key+".tmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "root")
	if err := os.MkdirAll(filepath.Join(root, "boot"), 0o755); err != nil {
		return nil, err
	}
	if err := os.Symlink(lk.image, filepath.Join(root, "boot", "vmlinuz-"+lk.release)); err != nil {
		return nil, err
	}
	switch {
	case lk.tree:
		err = linkTreeModules(ctx, lk.modules, root, lk.release)
	case lk.modules != "":
		err = linkModulesDir(ctx, lk.modules, root, lk.release)
	}
	if err != nil {
		return nil, err
	}
	source := lk.image
	if lk.modules != "" {
		source += " " + lk.modules
	}
	if err := writeManifest(root, manifest{Name: name, Source: source, Release: lk.release}); err != nil {
		return nil, err
	}
	final := filepath.Join(dir, key)
	if err := install(root, final); err != nil {
		return nil, err
	}
	k, _, err := verifyEntry(final)
	return k, err
}

// linkModulesDir makes root/lib/modules/release point at src: a symlink
// when src is indexed (modules.dep), else a tree of per-file symlinks that
// depmod indexes, so src is never written to.
func linkModulesDir(ctx context.Context, src, root, release string) error {
	dst := filepath.Join(root, "lib", "modules", release)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if exists(filepath.Join(src, "modules.dep")) {
		return os.Symlink(src, dst)
	}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		return os.Symlink(path, filepath.Join(dst, rel))
	})
	if err != nil {
		return err
	}
	return ensureDepmod(ctx, root, release)
}

// linkTreeModules lays out a built tree's modules the way make
// modules_install would (lib/modules/R/kernel/PATH.ko, modules.order,
// modules.builtin{,.modinfo}), with symlinks into the tree, then runs depmod.
func linkTreeModules(ctx context.Context, tree, root, release string) error {
	dst := filepath.Join(root, "lib", "modules", release)
	order, err := os.Open(filepath.Join(tree, "modules.order"))
	if err != nil {
		return err
	}
	defer order.Close()
	var lines []string
	sc := bufio.NewScanner(order)
	for sc.Scan() {
		// Since 6.2 modules.order lists "drivers/net/tun.o"; before, "kernel/drivers/net/tun.ko".
		rel := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "kernel/")
		if rel == "" {
			continue
		}
		if strings.HasSuffix(rel, ".o") {
			rel = strings.TrimSuffix(rel, ".o") + ".ko"
		}
		src := filepath.Join(tree, rel)
		if !exists(src) {
			return fmt.Errorf("%s lists %s, which is not built: run make modules", filepath.Join(tree, "modules.order"), rel)
		}
		to := filepath.Join(dst, "kernel", rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(src, to); err != nil {
			return err
		}
		lines = append(lines, "kernel/"+rel)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	listed := []byte(strings.Join(lines, "\n") + "\n")
	if err := os.WriteFile(filepath.Join(dst, "modules.order"), listed, 0o644); err != nil {
		return err
	}
	for _, f := range []string{"modules.builtin", "modules.builtin.modinfo"} {
		data, err := os.ReadFile(filepath.Join(tree, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, f), data, 0o644); err != nil {
			return err
		}
	}
	return ensureDepmod(ctx, root, release)
}

func nonEmpty(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Size() > 0
}
