package kbuild

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/heartbeat"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/kernels/internal/cachefile"
)

// maker runs kbuild out of tree, with ccache, its output into the log.
//
// Two settings make a compile that misses the cache cheaper, and neither
// changes the code gcc emits:
//   - ccache's depend mode takes the headers a file includes from the
//     dependency file gcc writes anyway (kbuild's -Wp,-MMD) instead of
//     running the preprocessor a second time to hash its output, which
//     for a kernel file is a large share of its compile.
//   - -fno-var-tracking drops the DWARF location lists, which only a
//     debugger reads (CONFIG_DEBUG_INFO_REDUCED drops them too); pahole
//     makes BTF from the types, which stay whole.
type maker struct {
	ctx              context.Context
	src, out, ccache string
	log              io.Writer
	logPath          string
	progress         io.Writer
}

func (m *maker) cmd(args ...string) *exec.Cmd {
	c := exec.CommandContext(m.ctx, "make", append([]string{"-C", m.src, "O=" + m.out, "CC=ccache gcc"}, args...)...)
	c.Env = append(recipeEnv(),
		"CCACHE_DIR="+m.ccache, "CCACHE_BASEDIR="+filepath.Dir(m.src), "CCACHE_NOHASHDIR=1", "CCACHE_MAXSIZE=20G",
		"CCACHE_DEPEND=1", "KCFLAGS=-fno-var-tracking",
		"KBUILD_BUILD_USER=xmitcheck", "KBUILD_BUILD_HOST=xmitcheck", "LC_ALL=C")
	return c
}

// recipeEnv is the environment without the flags kbuild adds to every
// compile (KCFLAGS, KCPPFLAGS, KAFLAGS, KRUSTFLAGS): the recipe alone sets
// them, since a build is cached by its recipe, not by the caller's
// environment, and flags from there would change the code of a build a
// later call without them is given.
func recipeEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"KCFLAGS", "KCPPFLAGS", "KAFLAGS", "KRUSTFLAGS"}, name)
	})
}

// run runs make, its output into the log; a failure carries the log's
// last lines and where the whole log is.
func (m *maker) run(args ...string) error {
	c := m.cmd(args...)
	c.Stdout, c.Stderr = m.log, m.log
	stop := m.heartbeat()
	err := c.Run()
	stop()
	if err == nil {
		return nil
	}
	if m.ctx.Err() != nil {
		return m.ctx.Err()
	}
	return fmt.Errorf("%w: make %s: %v; the last lines of %s:\n%s",
		ErrBuild, strings.Join(args, " "), err, m.logPath, tail(m.logPath, 20))
}

func (m *maker) output(args ...string) (string, error) {
	out, err := m.cmd(args...).Output()
	if err != nil {
		return "", fmt.Errorf("%w: make %s: %v", ErrBuild, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// heartbeat says every 30 s what make is doing (the log's last line), so
// a long build shows progress where there is no terminal.
func (m *maker) heartbeat() (stop func()) {
	if m.progress == nil {
		return func() {}
	}
	return heartbeat.Start(30*time.Second, func(elapsed time.Duration) {
		cachefile.Note(m.progress, "build: %v, %s", elapsed, strings.TrimSpace(tail(m.logPath, 1)))
	})
}

// configure makes out/.config and checks that every option of the
// suites' fragment (kernels/config) and of frags holds. The minimal base is
// allnoconfig given base.config, kernels/config and frags, in that order, as
// KCONFIG_ALLCONFIG: every option they do not name is off, so an option
// they turn on brings no default-y children. The defconfig base is
// defconfig and kvm_guest.config with the fragments merged, then
// olddefconfig. The old .config is replaced only when the new one differs,
// so an unchanged config rebuilds nothing.
//
// The config is made in an object directory of its own, kept beside out:
// kconfig's programs are built there once, not at every build, and each
// target writes its .config afresh.
func (m *maker) configure(base string, frags []string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(m.out), "fragments-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	checked := append([]string{kernels.Config}, frags...)
	cfgOut := filepath.Join(filepath.Dir(m.out), "config-"+filepath.Base(m.out))
	cfg := &maker{ctx: m.ctx, src: m.src, out: cfgOut, ccache: m.ccache, log: m.log, logPath: m.logPath}
	if base == BaseMinimal {
		// Base goes first and is not checked: it names options of
		// several kernel versions. A later line overrides an earlier.
		all := filepath.Join(tmp, "allno.config")
		data := strings.Join(append([]string{kernels.Base}, checked...), "\n")
		if err := os.WriteFile(all, []byte(data), 0o644); err != nil {
			return err
		}
		if err := cfg.run("KCONFIG_ALLCONFIG="+all, "allnoconfig"); err != nil {
			return err
		}
	} else if err := cfg.mergeDefconfig(tmp, checked); err != nil {
		return err
	}
	got, err := os.ReadFile(filepath.Join(cfg.out, ".config"))
	if err != nil {
		return err
	}
	if err := checkConfig(string(got), checked); err != nil {
		return err
	}
	if old, err := os.ReadFile(filepath.Join(m.out, ".config")); err == nil && string(old) == string(got) {
		return nil
	}
	return os.WriteFile(filepath.Join(m.out, ".config"), got, 0o644)
}

// mergeDefconfig makes m.out/.config from defconfig, kvm_guest.config and
// frags (written to files in tmp), merged and completed by olddefconfig.
func (m *maker) mergeDefconfig(tmp string, frags []string) error {
	var paths []string
	for i, f := range frags {
		path := filepath.Join(tmp, fmt.Sprintf("fragment-%d.config", i))
		if err := os.WriteFile(path, []byte(f), 0o644); err != nil {
			return err
		}
		paths = append(paths, path)
	}
	if err := m.run("defconfig", "kvm_guest.config"); err != nil {
		return err
	}
	mergeArgs := append([]string{"-m", "-O", m.out, filepath.Join(m.out, ".config")}, paths...)
	merge := exec.CommandContext(m.ctx, filepath.Join(m.src, "scripts/kconfig/merge_config.sh"), mergeArgs...)
	merge.Dir, merge.Stdout, merge.Stderr = m.src, m.log, m.log
	if err := merge.Run(); err != nil {
		return fmt.Errorf("%w: merge_config.sh: %v (see %s)", ErrBuild, err, m.logPath)
	}
	return m.run("olddefconfig")
}

// checkConfig fails when an option a fragment sets did not survive
// olddefconfig (a missing dependency, an option the tree does not have).
// A fragment given with --config can turn the dependency on; an option the
// tree lacks needs another tree.
func checkConfig(config string, frags []string) error {
	have := map[string]bool{}
	for l := range strings.SplitSeq(config, "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var lost []string
	for _, f := range frags {
		sc := bufio.NewScanner(strings.NewReader(f))
		for sc.Scan() {
			l := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(l, "CONFIG_") && !have[l] {
				lost = append(lost, l)
			}
		}
	}
	if len(lost) > 0 {
		return fmt.Errorf("%w: the config lost %s after olddefconfig: turn on its dependencies with --config",
			ErrBuild, strings.Join(lost, " "))
	}
	return nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
