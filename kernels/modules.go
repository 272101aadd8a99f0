package kernels

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// GuestModules are the modules a native guest loads before the suites run,
// transport first. On Debian's kernels some are built in and some are
// modules, and which ones moves between releases (virtio_pci and
// virtio_console are modules on 6.1 and built in on 7.3): ModuleClosure
// sorts that out per kernel.
var GuestModules = []string{
	// The VM transport: virtio-serial ports over virtio PCI.
	"virtio_pci",
	"virtio_console",
	// suites/tun, suites/vhost: tap devices, vhost-net (pulls in vhost, tap, tun).
	"tun",
	"vhost_net",
	// suites/devmap and suites/qdisc: veth pairs with native XDP.
	"veth",
	// Frames are sent and read through AF_PACKET.
	"af_packet",
	// Qdiscs the suites put in front of the devices.
	"sch_fq_codel",
	"sch_netem",
	// suites/devmap bursts frames with a tc BPF program on clsact (in sch_ingress).
	"sch_ingress",
	"cls_bpf",
}

// SuiteModules are the modules each suite (suites/NAME) needs, of
// GuestModules: an installed kselftest collection loads them before the
// suite runs, and skips the suite when the kernel builds one as a module
// it cannot load.
var SuiteModules = map[string][]string{
	"tun":    {"tun", "af_packet", "sch_fq_codel"},
	"vhost":  {"tun", "vhost_net", "af_packet", "sch_fq_codel"},
	"qdisc":  {"veth", "tun", "af_packet", "sch_fq_codel"},
	"devmap": {"veth", "tun", "af_packet", "sch_ingress", "cls_bpf"},
}

// Module is one loadable module file.
type Module struct {
	// Name is the module name with underscores, as lsmod shows it.
	Name string
	// Path is the file (.ko, .ko.xz, .ko.zst or .ko.gz).
	Path string
}

// ModuleClosure resolves names (module names; '-' and '_' are the same) to
// the module files to load from modulesDir (a lib/modules/RELEASE directory),
// each module's dependencies before it, each file once. A module listed in
// modules.builtin is neither loaded nor missing; a module in neither
// modules.dep nor modules.builtin is returned in missing, in the order asked.
func ModuleClosure(modulesDir string, names []string) (mods []Module, missing []string, err error) {
	deps, err := readModulesDep(modulesDir)
	if err != nil {
		return nil, nil, err
	}
	builtin, err := readModulesBuiltin(modulesDir)
	if err != nil {
		return nil, nil, err
	}
	done := map[string]bool{}
	var visit func(name string, chain []string) error
	visit = func(name string, chain []string) error {
		if done[name] {
			return nil
		}
		for _, c := range chain {
			if c == name {
				return fmt.Errorf("%s: dependency cycle %s → %s: run depmod again",
					filepath.Join(modulesDir, "modules.dep"), strings.Join(chain, " → "), name)
			}
		}
		e := deps[name]
		for _, d := range e.deps {
			if _, ok := deps[d]; !ok {
				return fmt.Errorf("%s: %s depends on %s, which has no line of its own: run depmod again",
					filepath.Join(modulesDir, "modules.dep"), name, d)
			}
			if err := visit(d, append(chain, name)); err != nil {
				return err
			}
		}
		done[name] = true
		mods = append(mods, Module{Name: name, Path: e.path})
		return nil
	}
	for _, n := range names {
		n = strings.ReplaceAll(n, "-", "_")
		switch {
		case done[n] || builtin[n]:
		case deps[n].path == "":
			missing = append(missing, n)
		default:
			if err := visit(n, nil); err != nil {
				return nil, nil, err
			}
		}
	}
	return mods, missing, nil
}

type depEntry struct {
	path string   // absolute
	deps []string // module names
}

// readModulesDep parses depmod's modules.dep: one line per module,
// "kernel/drivers/net/tun.ko.xz: kernel/…/dep.ko.xz …".
func readModulesDep(dir string) (map[string]depEntry, error) {
	path := filepath.Join(dir, "modules.dep")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: run depmod -b ROOT RELEASE for %s's modules", err, dir)
	}
	defer f.Close()
	out := map[string]depEntry{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		mod, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: %q has no ':': run depmod again", path, line, sc.Text())
		}
		e := depEntry{path: mod}
		if !filepath.IsAbs(mod) {
			e.path = filepath.Join(dir, mod)
		}
		for _, d := range strings.Fields(rest) {
			e.deps = append(e.deps, moduleName(d))
		}
		out[moduleName(mod)] = e
	}
	return out, sc.Err()
}

// readModulesBuiltin parses modules.builtin (paths of built-in modules);
// a kernel without the file has nothing built in that the names ask for.
func readModulesBuiltin(dir string) (map[string]bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, "modules.builtin"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, l := range strings.Fields(string(data)) {
		out[moduleName(l)] = true
	}
	return out, nil
}

// moduleName turns "kernel/net/sched/sch_fq-codel.ko.xz" into "sch_fq_codel".
func moduleName(path string) string {
	base := filepath.Base(path)
	if i := strings.Index(base, ".ko"); i >= 0 {
		base = base[:i]
	}
	return strings.ReplaceAll(base, "-", "_")
}

// isModuleFile says whether a file name is a (possibly compressed) module.
func isModuleFile(name string) bool {
	for _, ext := range []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// ReadModule returns the ELF image of a module file, decompressing .ko.xz,
// .ko.zst and .ko.gz, ready for finit_module/init_module.
func ReadModule(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = bufio.NewReader(f)
	switch {
	case strings.HasSuffix(path, ".ko"):
	case strings.HasSuffix(path, ".ko.xz"):
		zr, err := xz.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	case strings.HasSuffix(path, ".ko.zst"):
		zr, err := zstd.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	case strings.HasSuffix(path, ".ko.gz"):
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	default:
		return nil, fmt.Errorf("%s is not a module file (.ko, .ko.xz, .ko.zst or .ko.gz)", path)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !bytes.HasPrefix(data, []byte("\x7fELF")) {
		return nil, fmt.Errorf("%s does not hold an ELF module", path)
	}
	return data, nil
}
