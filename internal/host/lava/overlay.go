package lava

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/xmitcheck/xmitcheck/kernels"
)

// WriteTreeTar writes the directory root (an installed collection) as a
// tar, its paths relative to root: LAVA unpacks it at the overlay's path.
func WriteTreeTar(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		return addFile(tw, path, filepath.ToSlash(rel), d)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// WriteModulesTar writes what the guest needs of the kernel's modules
// directory (lib/modules/RELEASE) to load names: their files and their
// dependencies', as they are, with modules.dep and modules.builtin, at
// lib/modules/RELEASE/… (the overlay's path is /). It returns the modules
// it holds; a kernel without a modules directory (all built in) has none.
func WriteModulesTar(w io.Writer, k *kernels.Kernel, names []string) ([]string, error) {
	if k.ModulesDir == "" {
		return nil, nil
	}
	mods, _, err := kernels.ModuleClosure(k.ModulesDir, names)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(w)
	prefix := "lib/modules/" + k.Release + "/"
	files := []string{"modules.dep"}
	for _, f := range []string{"modules.builtin", "modules.order"} {
		if _, err := os.Stat(filepath.Join(k.ModulesDir, f)); err == nil {
			files = append(files, f) // not every kernel has them
		}
	}
	var held []string
	for _, m := range mods {
		rel, err := filepath.Rel(k.ModulesDir, m.Path)
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("module %s at %s is outside %s", m.Name, m.Path, k.ModulesDir)
		}
		files = append(files, rel)
		held = append(held, m.Name)
	}
	for _, rel := range files {
		path := filepath.Join(k.ModulesDir, rel)
		st, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if err := addFile(tw, path, prefix+filepath.ToSlash(rel), fs.FileInfoToDirEntry(st)); err != nil {
			return nil, err
		}
	}
	return held, tw.Close()
}

// addFile adds a directory or a regular file at name; other files are
// left out.
func addFile(tw *tar.Writer, path, name string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	if !info.IsDir() && !info.Mode().IsRegular() {
		return nil
	}
	h, err := tar.FileInfoHeader(info, "")
	if err != nil {
		return err
	}
	h.Name, h.Uid, h.Gid, h.Uname, h.Gname = name, 0, 0, "root", "root"
	if info.IsDir() {
		h.Name += "/"
		return tw.WriteHeader(h)
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}
