package kernels

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/xmitcheck/xmitcheck/kernels/internal/cachefile"
)

// manifestName is the last file written into a cache entry: an entry without
// it is incomplete.
const manifestName = "manifest.json"

// manifest describes a complete cache entry.
type manifest struct {
	Name string `json:"name"`
	// Package and Version name the image package; Packages lists every
	// package the entry was built from as "name=version".
	Package  string   `json:"package,omitempty"`
	Version  string   `json:"version,omitempty"`
	Packages []string `json:"packages,omitempty"`
	// Source is the path a local kernel was given as.
	Source        string `json:"source,omitempty"`
	Release       string `json:"release"`
	VmlinuzSHA256 string `json:"vmlinuz_sha256"`
	// ModuleFiles counts lib/modules/Release's module files; 0 means every
	// option is built in and there is no modules directory.
	ModuleFiles int `json:"module_files"`
}

// DefaultCacheDir is $XDG_CACHE_HOME/xmitcheck/kernels, else
// ~/.cache/xmitcheck/kernels.
func DefaultCacheDir() (string, error) {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "xmitcheck", "kernels"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: set XDG_CACHE_HOME or HOME (%w)", err)
	}
	return filepath.Join(home, ".cache", "xmitcheck", "kernels"), nil
}

func (o Options) cacheDir() (string, error) {
	if o.CacheDir != "" {
		return o.CacheDir, nil
	}
	return DefaultCacheDir()
}

// entryKey names a catalog kernel's cache entry: "debian:7.3" → "debian-7.3".
func entryKey(name string) string { return strings.ReplaceAll(name, ":", "-") }

// kernel is the Kernel an entry at root describes.
func (m *manifest) kernel(root string) *Kernel {
	k := &Kernel{
		Name:           m.Name,
		Release:        m.Release,
		Root:           root,
		Vmlinuz:        filepath.Join(root, "boot", "vmlinuz-"+m.Release),
		Package:        m.Package,
		PackageVersion: m.Version,
	}
	if m.ModuleFiles > 0 {
		k.ModulesDir = filepath.Join(root, "lib", "modules", m.Release)
	}
	return k
}

// writeManifest writes the manifest of the entry being built at root,
// hashing its vmlinuz and counting its modules; it must be the last write.
func writeManifest(root string, m manifest) error {
	sum, err := cachefile.SHA256(m.kernel(root).Vmlinuz)
	if err != nil {
		return err
	}
	m.VmlinuzSHA256 = sum
	mods := filepath.Join(root, "lib", "modules", m.Release)
	if _, err := os.Lstat(mods); err == nil {
		if m.ModuleFiles, err = countModules(mods); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(root, "."+manifestName)
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(root, manifestName))
}

// verifyEntry checks the entry at root against its manifest: parseable,
// vmlinuz hash, modules directory with modules.dep and the recorded number of
// module files.
func verifyEntry(root string) (*Kernel, *manifest, error) {
	data, err := os.ReadFile(filepath.Join(root, manifestName))
	if err != nil {
		return nil, nil, fmt.Errorf("no manifest (an interrupted fetch?): %v", err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, nil, fmt.Errorf("manifest: %w", err)
	}
	if m.Name == "" || m.Release == "" || m.VmlinuzSHA256 == "" {
		return nil, nil, fmt.Errorf("manifest lacks name, release or vmlinuz hash")
	}
	k := m.kernel(root)
	sum, err := cachefile.SHA256(k.Vmlinuz)
	if err != nil {
		return nil, nil, err
	}
	if sum != m.VmlinuzSHA256 {
		return nil, nil, fmt.Errorf("%s has sha256 %s, the manifest says %s", k.Vmlinuz, sum, m.VmlinuzSHA256)
	}
	if m.ModuleFiles > 0 {
		if !exists(filepath.Join(k.ModulesDir, "modules.dep")) {
			return nil, nil, fmt.Errorf("%s has no modules.dep", k.ModulesDir)
		}
		n, err := countModules(k.ModulesDir)
		if err != nil {
			return nil, nil, err
		}
		if n != m.ModuleFiles {
			return nil, nil, fmt.Errorf("%s has %d module files, the manifest says %d", k.ModulesDir, n, m.ModuleFiles)
		}
	}
	return k, &m, nil
}

// install moves the complete entry built at tmp to final, replacing what
// is there. The caller holds the entry's lock.
func install(tmp, final string) error {
	if _, err := os.Lstat(final); err != nil {
		return os.Rename(tmp, final)
	}
	old, err := os.MkdirTemp(filepath.Dir(final), "."+filepath.Base(final)+".old-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(old)
	if err := os.Rename(final, filepath.Join(old, "entry")); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Rename(filepath.Join(old, "entry"), final)
		return err
	}
	return nil
}

// removeLeftovers deletes the temporary directories of runs that were killed
// while building or replacing the entry key. The caller holds its lock.
func removeLeftovers(dir, key string) {
	for _, pattern := range []string{"." + key + ".tmp-*", "." + key + ".old-*"} {
		matches, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, m := range matches {
			os.RemoveAll(m)
		}
	}
}

// removeEntry deletes an unusable entry; a failure to delete it is an error,
// since it would be reported as corrupt again and again.
func removeEntry(root string) error {
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("removing the corrupt cache entry %s: %w", root, err)
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
