package kernels

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/heartbeat"
)

// BuildOptions says which kernel to build from source.
type BuildOptions struct {
	Options
	// Tree is a kernel source tree: a git checkout or a plain tree such as
	// Debian's linux-source. It is never written to.
	Tree string
	// Revert and Apply are patch files (Revert also takes commits of a git
	// Tree), applied in order, reverts first, to a copy of the tree.
	Revert, Apply []string
	// Config lists extra config fragments, merged after the suites' own.
	Config []string
	// Name is what --kernel build:NAME finds it by; empty derives one from
	// the tree and the patches.
	Name string
	// Jobs is make's -j; 0 means one per CPU.
	Jobs int
	// Base is the config the fragments go on: BaseMinimal (the
	// default, also when empty) or BaseDefconfig.
	Base string
	// Debug are debug flavours (DebugFlavours): each adds its sanitizer's
	// fragment after the suites' own, before Config. A flavoured build has
	// objects of its own, and its name ends with them ("7.3.4+kcsan").
	Debug []string
}

// The bases a build's config can start from.
const (
	// BaseDefconfig is defconfig and kvm_guest.config.
	BaseDefconfig = "defconfig"
	// BaseMinimal is allnoconfig and base.config: only what boots the
	// guest and what the suites need, about half of defconfig's options.
	BaseMinimal = "minimal"
)

func (o BuildOptions) base() (string, error) {
	switch o.Base {
	case "", BaseMinimal:
		return BaseMinimal, nil
	case BaseDefconfig:
		return BaseDefconfig, nil
	}
	return "", fmt.Errorf("unknown config base %q: use %s or %s", o.Base, BaseMinimal, BaseDefconfig)
}

// Built is a kernel built from source, in the build cache.
type Built struct {
	Name string `json:"name"`
	// Key identifies the inputs: the tree's content, the patches, the
	// config fragments and the recipe.
	Key     string   `json:"key"`
	Tree    string   `json:"tree"`
	Commit  string   `json:"commit,omitempty"`
	Patches []string `json:"patches,omitempty"`
	// Debug are the debug flavours built in (kcsan, kasan, ...).
	Debug   []string `json:"debug,omitempty"`
	Release string   `json:"release"`
	// Took is how long make ran (0 for a cached build).
	Took time.Duration `json:"took"`
	// Dir holds bzImage, config and build.json.
	Dir    string `json:"-"`
	Cached bool   `json:"-"`
}

// Image is the built bzImage.
func (b *Built) Image() string { return filepath.Join(b.Dir, "bzImage") }

// recipes change whenever the way a tree becomes a bzImage changes, so
// that no build made the old way is taken for a new one; one per base.
var recipes = map[string]string{
	BaseDefconfig: "defconfig+kvm_guest.config+fragments, olddefconfig, bzImage, ccache gcc, v2",
	BaseMinimal:   "allnoconfig with base.config+fragments as KCONFIG_ALLCONFIG, bzImage, ccache gcc, v4",
}

// ErrBuild wraps every failure of the build itself (the compiler, a
// patch that does not apply): the tree or the patches are at fault, not
// the machine. Bisection calls such a commit untestable.
var ErrBuild = errors.New("kernel build failed")

// buildPaths are where builds live, beside the kernel cache: the work copy
// of the tree and its objects (reused, so make and ccache rebuild only
// what changed), ccache's files and the finished builds by key, with a
// symlink per name. Each config base has its own objects: a build on the
// other base would otherwise change most of the config and make the next
// build on this one recompile the whole tree.
type buildPaths struct{ work, src, ccache, builds string }

// out is the object directory of the builds on base.
func (p buildPaths) out(base string) string { return filepath.Join(p.work, "out-"+base) }

func (o Options) buildPaths() (buildPaths, error) {
	dir, err := o.cacheDir()
	if err != nil {
		return buildPaths{}, err
	}
	root := filepath.Dir(dir)
	work := filepath.Join(root, "buildwork")
	return buildPaths{
		work:   work,
		src:    filepath.Join(work, "src"),
		ccache: filepath.Join(root, "ccache"),
		builds: filepath.Join(root, "builds"),
	}, nil
}

// buildTools are the programs a build needs, with the Debian package of each.
var buildTools = [][2]string{
	{"make", "make"}, {"gcc", "gcc"}, {"flex", "flex"}, {"bison", "bison"}, {"bc", "bc"},
	{"pahole", "dwarves"}, {"ccache", "ccache"}, {"patch", "patch"}, {"perl", "perl"},
}

func checkBuildTools() error {
	var missing []string
	for _, t := range buildTools {
		if _, err := exec.LookPath(t[0]); err != nil {
			missing = append(missing, t[1])
		}
	}
	if _, err := os.Stat("/usr/include/libelf.h"); err != nil {
		missing = append(missing, "libelf-dev")
	}
	if _, err := os.Stat("/usr/include/openssl/ssl.h"); err != nil {
		missing = append(missing, "libssl-dev")
	}
	if len(missing) > 0 {
		return fmt.Errorf("building a kernel needs %s: run `make deps` or apt-get install them",
			strings.Join(missing, " "))
	}
	return nil
}

// Build builds o.Tree, with o's patches and config fragments on a copy,
// into a bzImage with everything the suites need built in, and caches it by
// its inputs. A failed build leaves nothing in the cache. Progress says
// which stage runs; make's output goes to a log whose tail a failure
// shows.
func Build(ctx context.Context, o BuildOptions) (*Built, error) {
	tree, err := filepath.Abs(o.Tree)
	if err != nil {
		return nil, err
	}
	if err := checkTree(tree); err != nil {
		return nil, err
	}
	base, err := o.base()
	if err != nil {
		return nil, err
	}
	if err := checkBuildTools(); err != nil {
		return nil, err
	}
	patches, err := readPatches(ctx, tree, o.Revert, o.Apply)
	if err != nil {
		return nil, err
	}
	debug, err := ParseDebug(o.Debug)
	if err != nil {
		return nil, err
	}
	var frags []string
	for _, f := range debug {
		data, err := DebugConfig(f)
		if err != nil {
			return nil, err
		}
		frags = append(frags, data)
	}
	for _, f := range o.Config {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("config fragment: %w", err)
		}
		frags = append(frags, string(data))
	}
	p, err := o.buildPaths()
	if err != nil {
		return nil, err
	}
	// A sanitizer changes the flags of every file: its builds keep their
	// own objects, so a plain build after one recompiles nothing.
	out := p.out(base + debugSuffix(debug))
	for _, d := range []string{p.src, out, p.ccache, p.builds} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("creating the build cache: %w", err)
		}
	}
	unlock, err := lock(ctx, filepath.Join(p.work, "lock"), "the kernel build directory", o.Progress)
	if err != nil {
		return nil, err
	}
	defer unlock()

	start := time.Now()
	note(o.Progress, "build: reading %s into %s…", tree, p.src)
	files, err := listTree(ctx, tree)
	if err != nil {
		return nil, err
	}
	treeSum, written, err := syncTree(ctx, tree, p.src, files)
	if err != nil {
		return nil, err
	}
	note(o.Progress, "build: %d files, %d changed since the last build (%v)",
		len(files), written, time.Since(start).Round(time.Millisecond))

	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", recipes[base], treeSum, Config)
	if base == BaseMinimal {
		fmt.Fprintf(h, "base\n%s\n", Base)
	}
	for _, pt := range patches {
		fmt.Fprintf(h, "%s %s\n%s\n", pt.dir, pt.name, pt.body)
	}
	for _, f := range frags {
		fmt.Fprintf(h, "fragment\n%s\n", f)
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]
	b := &Built{Name: o.Name, Key: key, Tree: tree, Commit: gitCommit(ctx, tree), Debug: debug,
		Dir: filepath.Join(p.builds, key)}
	for _, pt := range patches {
		b.Patches = append(b.Patches, pt.dir+" "+pt.name)
	}
	if b.Name == "" {
		b.Name = defaultBuildName(tree, b.Commit, patches)
	}
	if suffix := debugSuffix(debug); !strings.HasSuffix(b.Name, suffix) {
		b.Name += suffix
	}
	if err := validBuildName(b.Name); err != nil {
		return nil, err
	}
	if cached, err := readBuilt(b.Dir); err == nil {
		cached.Name, cached.Cached = b.Name, true
		note(o.Progress, "build: cached (%s, built from the same tree, patches and config)", b.Dir)
		return cached, linkName(p.builds, b.Name, key)
	}

	for _, pt := range patches {
		note(o.Progress, "build: %s %s", pt.dir, pt.name)
		if err := pt.applyTo(ctx, p.src); err != nil {
			return nil, err
		}
	}
	logPath := filepath.Join(p.work, "build.log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	mk := maker{ctx: ctx, src: p.src, out: out, ccache: p.ccache, log: log, logPath: logPath, progress: o.Progress}
	note(o.Progress, "build: config (%s base, the suites' fragment%s)", base, debugNote(debug))
	if err := mk.configure(base, frags); err != nil {
		return nil, err
	}
	jobs := o.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	note(o.Progress, "build: make -j%d bzImage (log: %s)", jobs, logPath)
	makeStart := time.Now()
	if err := mk.run(fmt.Sprintf("-j%d", jobs), "bzImage"); err != nil {
		return nil, err
	}
	b.Took = time.Since(makeStart).Round(time.Second)
	release, err := mk.output("-s", "kernelrelease")
	if err != nil {
		return nil, err
	}
	b.Release = strings.TrimSpace(release)
	if err := b.install(p.builds, out); err != nil {
		return nil, fmt.Errorf("saving the build in %s: %w", p.builds, err)
	}
	note(o.Progress, "build: %s (%s) in %v: %s", b.Name, b.Release, b.Took, b.Image())
	return b, linkName(p.builds, b.Name, key)
}

// install copies the image and config from the object directory out into
// a temporary directory in builds and renames it into place: a build is
// whole in the cache or not there.
func (b *Built) install(builds, out string) error {
	tmp, err := os.MkdirTemp(builds, "."+b.Key+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	for _, f := range [][2]string{{"arch/x86/boot/bzImage", "bzImage"}, {".config", "config"}} {
		if err := copyFile(filepath.Join(out, f[0]), filepath.Join(tmp, f[1])); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "build.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	os.RemoveAll(b.Dir)
	return os.Rename(tmp, b.Dir)
}

func readBuilt(dir string) (*Built, error) {
	data, err := os.ReadFile(filepath.Join(dir, "build.json"))
	if err != nil {
		return nil, err
	}
	var b Built
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	b.Dir = dir
	if _, err := os.Stat(b.Image()); err != nil {
		return nil, err
	}
	return &b, nil
}

// linkName points builds/NAME at the build's key directory, atomically.
func linkName(builds, name, key string) error {
	tmp := filepath.Join(builds, "."+name+".link")
	os.Remove(tmp)
	if err := os.Symlink(key, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(builds, name))
}

// LookupBuild returns the build called name.
func LookupBuild(name string, o Options) (*Built, error) {
	p, err := o.buildPaths()
	if err != nil {
		return nil, err
	}
	b, err := readBuilt(filepath.Join(p.builds, name))
	if err != nil {
		return nil, fmt.Errorf("%w build:%s: no such build in %s: run `xmitcheck kernels build --tree DIR --name %[2]s`",
			ErrUnknownKernel, name, p.builds)
	}
	b.Name = name
	return b, nil
}

var buildNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

func validBuildName(name string) error {
	if !buildNameRE.MatchString(name) {
		return fmt.Errorf("build name %q: use letters, digits and . _ + - (it becomes --kernel build:NAME)", name)
	}
	return nil
}

// defaultBuildName is the tree's directory name (or its commit), with a
// word per patch.
func defaultBuildName(tree, commit string, patches []patch) string {
	name := filepath.Base(tree)
	if commit != "" {
		name += "-" + commit[:12]
	}
	for _, p := range patches {
		base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(p.name), ".patch"), ".diff")
		name += "+" + p.dir + "-" + base
	}
	return regexp.MustCompile(`[^A-Za-z0-9._+-]`).ReplaceAllString(name, "_")
}

// gitCommit is the checked-out commit of a git tree, "" otherwise.
func gitCommit(ctx context.Context, tree string) string {
	if !isGit(tree) {
		return ""
	}
	out, err := exec.CommandContext(ctx, "git", "-C", tree, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

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
		note(m.progress, "build: %v, %s", elapsed, strings.TrimSpace(tail(m.logPath, 1)))
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
	checked := append([]string{Config}, frags...)
	cfgOut := filepath.Join(filepath.Dir(m.out), "config-"+filepath.Base(m.out))
	cfg := &maker{ctx: m.ctx, src: m.src, out: cfgOut, ccache: m.ccache, log: m.log, logPath: m.logPath}
	if base == BaseMinimal {
		// Base goes first and is not checked: it names options of
		// several kernel versions. A later line overrides an earlier.
		all := filepath.Join(tmp, "allno.config")
		if err := os.WriteFile(all, []byte(strings.Join(append([]string{Base}, checked...), "\n")), 0o644); err != nil {
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
