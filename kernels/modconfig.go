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

// UnloadableModules returns the modules of names that k builds as modules
// (its config says "=m") while no modules directory came with it: the
// guest cannot load them, so what needs them cannot be tested. The config
// is read beside the image (config-RELEASE, as Debian's /boot has it) or
// in the tree the image was built in (arch/x86/boot/bzImage's .config);
// without one, nothing is known and nothing is returned.
func UnloadableModules(k *Kernel, names []string) []string {
	if k.ModulesDir != "" || k.Host || k.Vmlinuz == "" {
		return nil
	}
	// A path kernel is copied into the cache: its config is beside the
	// path the user gave (k.Name), not beside the copy.
	var opts map[string]string
	for _, dir := range []string{filepath.Dir(k.Name), filepath.Dir(k.Vmlinuz)} {
		for _, p := range []string{filepath.Join(dir, "config-"+k.Release), filepath.Join(dir, "..", "..", "..", ".config")} {
			if opts == nil {
				opts = readConfig(p)
			}
		}
	}
	var out []string
	for _, n := range names {
		if o := moduleOption[strings.ReplaceAll(n, "-", "_")]; o != "" && opts[o] == "m" {
			out = append(out, n)
		}
	}
	return out
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
