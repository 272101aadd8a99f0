package kernels

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// moduleOption is the config option that builds each of GuestModules.
var moduleOption = map[string]string{
	"virtio_pci":     "CONFIG_VIRTIO_PCI",
	"virtio_console": "CONFIG_VIRTIO_CONSOLE",
	"tun":            "CONFIG_TUN",
	"vhost_net":      "CONFIG_VHOST_NET",
	"veth":           "CONFIG_VETH",
	"af_packet":      "CONFIG_PACKET",
	"sch_fq_codel":   "CONFIG_NET_SCH_FQ_CODEL",
	"sch_netem":      "CONFIG_NET_SCH_NETEM",
	"sch_ingress":    "CONFIG_NET_SCH_INGRESS",
	"cls_bpf":        "CONFIG_NET_CLS_BPF",
}

// ModuleOption is the config option that builds a module of GuestModules
// ("CONFIG_TUN" for tun; '-' and '_' are the same), "" for another.
func ModuleOption(name string) string {
	return moduleOption[strings.ReplaceAll(name, "-", "_")]
}

// MissingModules says what k, a kernel given as a path with no modules
// directory, lacks of names (the modules its guest loads): those its
// config builds as modules ("=m"), or, with no config to read, that its
// image takes modules at all (any of names may be one). The config is read
// beside the image (config-RELEASE, as Debian's /boot has it), in the tree
// the image was built in (arch/x86/boot/bzImage's .config), in /boot, or
// in the kernel cache's Debian kernel of the same release. It returns ""
// when nothing is missing, or nothing can be known; modules is a
// directory that would do, when the cache has one of that release.
func MissingModules(k *Kernel, names []string) (why, modules string) {
	if k.ModulesDir != "" || k.Host || k.Vmlinuz == "" {
		return "", ""
	}
	var dirs []string
	if cache, err := DefaultCacheDir(); err == nil {
		dirs, _ = filepath.Glob(filepath.Join(cache, "debian-*", "lib", "modules", k.Release))
	}
	if len(dirs) > 0 {
		modules = dirs[0]
	}
	opts, config := readConfigOf(k)
	if opts == nil {
		if yes, err := takesModules(k.Vmlinuz); err != nil || !yes {
			return "", modules
		}
		return fmt.Sprintf("%s takes modules (CONFIG_MODULES, read in its image) and has no config to say "+
			"which drivers are modules", k.Name), modules
	}
	var out []string
	for _, n := range names {
		if o := ModuleOption(n); o != "" && opts[o] == "m" {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "", modules
	}
	return fmt.Sprintf("%s builds %s as modules (%s)", k.Name, strings.Join(out, ", "), config), modules
}

// readConfigOf finds and reads k's config (see MissingModules), and says
// where it was; nil when there is none.
func readConfigOf(k *Kernel) (map[string]string, string) {
	// A path kernel is copied into the cache: its config is beside the
	// path the user gave (k.Name), not beside the copy.
	var paths []string
	for _, dir := range []string{filepath.Dir(k.Name), filepath.Dir(k.Vmlinuz)} {
		paths = append(paths, filepath.Join(dir, "config-"+k.Release), filepath.Join(dir, "..", "..", "..", ".config"))
	}
	paths = append(paths, filepath.Join("/boot", "config-"+k.Release))
	if cache, err := DefaultCacheDir(); err == nil {
		cached, _ := filepath.Glob(filepath.Join(cache, "debian-*", "boot", "config-"+k.Release))
		paths = append(paths, cached...)
	}
	for _, p := range paths {
		if opts := readConfig(p); opts != nil {
			return opts, filepath.Clean(p)
		}
	}
	return nil, ""
}

// readConfig reads a kernel .config's options ("CONFIG_X" → "y", "m", …);
// nil when there is none.
func readConfig(path string) map[string]string {
	opts, _ := ReadConfig(path)
	return opts
}

// ReadConfig reads a kernel config's options ("CONFIG_X" → "y", "m", …),
// gzipped when its name ends in .gz (/proc/config.gz).
func ReadConfig(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	}
	opts := map[string]string{}
	s := bufio.NewScanner(r)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), "="); ok && strings.HasPrefix(k, "CONFIG_") {
			opts[k] = v
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return opts, nil
}
