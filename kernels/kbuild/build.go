// Package kbuild builds a kernel tree, with patches reverted or applied and
// config fragments merged on a copy, into the build cache that
// --kernel build:NAME resolves from (kernels.LookupBuild).
package kbuild

import (
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
	"runtime"
	"strings"
	"time"

	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/kernels/internal/cachefile"
)

// BuildOptions says which kernel to build from source.
type BuildOptions struct {
	kernels.Options
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

func pathsOf(o kernels.Options) (buildPaths, error) {
	builds, err := o.Builds()
	if err != nil {
		return buildPaths{}, err
	}
	root := filepath.Dir(builds)
	work := filepath.Join(root, "buildwork")
	return buildPaths{
		work:   work,
		src:    filepath.Join(work, "src"),
		ccache: filepath.Join(root, "ccache"),
		builds: builds,
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
func Build(ctx context.Context, o BuildOptions) (*kernels.Built, error) {
	in, err := o.inputs(ctx)
	if err != nil {
		return nil, err
	}
	w, unlock, err := openWork(ctx, o.Options, in.objects())
	if err != nil {
		return nil, err
	}
	defer unlock()
	treeSum, err := w.copyTree(ctx, in.tree, o.Progress)
	if err != nil {
		return nil, err
	}
	b, err := in.record(ctx, o.Name, treeSum, w.builds)
	if err != nil {
		return nil, err
	}
	if cached, err := kernels.ReadBuilt(b.Dir); err == nil {
		cached.Name, cached.Cached = b.Name, true
		cachefile.Note(o.Progress, "build: cached (%s, built from the same tree, patches and config)", b.Dir)
		return cached, linkName(w.builds, b.Name, b.Key)
	}
	if err := w.compile(ctx, in, o.Jobs, b, o.Progress); err != nil {
		return nil, err
	}
	if err := install(b, w.builds, w.out); err != nil {
		return nil, fmt.Errorf("saving the build in %s: %w", w.builds, err)
	}
	cachefile.Note(o.Progress, "build: %s (%s) in %v: %s", b.Name, b.Release, b.Took, b.Image())
	return b, linkName(w.builds, b.Name, b.Key)
}

// inputs are what a build is made of, read and checked before anything
// is written: the tree, the config base, the patches, the debug flavours
// and every config fragment (the flavours' first, then --config's).
type inputs struct {
	tree    string
	base    string
	patches []patch
	debug   []string
	frags   []string
}

func (o BuildOptions) inputs(ctx context.Context) (inputs, error) {
	var in inputs
	var err error
	if in.tree, err = filepath.Abs(o.Tree); err != nil {
		return inputs{}, err
	}
	if err := checkTree(in.tree); err != nil {
		return inputs{}, err
	}
	if in.base, err = o.base(); err != nil {
		return inputs{}, err
	}
	if err := checkBuildTools(); err != nil {
		return inputs{}, err
	}
	if in.patches, err = readPatches(ctx, in.tree, o.Revert, o.Apply); err != nil {
		return inputs{}, err
	}
	if in.debug, err = ParseDebug(o.Debug); err != nil {
		return inputs{}, err
	}
	in.frags, err = fragments(in.debug, o.Config)
	return in, err
}

// fragments are the debug flavours' config fragments (with the lockup
// watchdogs every debug kernel gets, debug/watchdogs.config), then the
// files'.
func fragments(debug, files []string) ([]string, error) {
	var frags []string
	if len(debug) > 0 {
		data, err := debugConfigs.ReadFile("debug/watchdogs.config")
		if err != nil {
			return nil, err
		}
		frags = append(frags, string(data))
	}
	for _, f := range debug {
		data, err := DebugConfig(f)
		if err != nil {
			return nil, err
		}
		frags = append(frags, data)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("config fragment: %w", err)
		}
		frags = append(frags, string(data))
	}
	return frags, nil
}

// objects names the build's object directory: one per base and set of
// flavours. A sanitizer changes the flags of every file: its builds keep
// their own objects, so a plain build after one recompiles nothing.
func (in inputs) objects() string { return in.base + debugSuffix(in.debug) }

// key identifies the inputs in the build cache: the recipe, the tree's
// content, the suites' fragment (and the minimal base's), the patches and
// the fragments.
func (in inputs) key(treeSum string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", recipes[in.base], treeSum, kernels.Config)
	if in.base == BaseMinimal {
		fmt.Fprintf(h, "base\n%s\n", kernels.Base)
	}
	for _, pt := range in.patches {
		fmt.Fprintf(h, "%s %s\n%s\n", pt.dir, pt.name, pt.body)
	}
	for _, f := range in.frags {
		fmt.Fprintf(h, "fragment\n%s\n", f)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// record is the build of the inputs, named name (derived from the tree and
// the patches when empty), its flavours at the end of the name.
func (in inputs) record(ctx context.Context, name, treeSum, builds string) (*kernels.Built, error) {
	key := in.key(treeSum)
	b := &kernels.Built{Name: name, Key: key, Tree: in.tree, Commit: gitCommit(ctx, in.tree), Debug: in.debug,
		Dir: filepath.Join(builds, key)}
	for _, pt := range in.patches {
		b.Patches = append(b.Patches, pt.dir+" "+pt.name)
	}
	if b.Name == "" {
		b.Name = defaultBuildName(in.tree, b.Commit, in.patches)
	}
	if suffix := debugSuffix(in.debug); !strings.HasSuffix(b.Name, suffix) {
		b.Name += suffix
	}
	return b, validBuildName(b.Name)
}

// work is the build cache's places for one build, its object directory
// among them.
type work struct {
	buildPaths
	out string
}

// openWork makes the build cache's directories and locks its work copy
// against other xmitchecks until unlock.
func openWork(ctx context.Context, o kernels.Options, objects string) (w work, unlock func(), err error) {
	p, err := pathsOf(o)
	if err != nil {
		return work{}, nil, err
	}
	w = work{buildPaths: p, out: p.out(objects)}
	for _, d := range []string{p.src, w.out, p.ccache, p.builds} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return work{}, nil, fmt.Errorf("creating the build cache: %w", err)
		}
	}
	unlock, err = cachefile.Lock(ctx, filepath.Join(p.work, "lock"), "the kernel build directory", o.Progress)
	return w, unlock, err
}

// copyTree makes the work copy hold exactly tree's files and returns the
// hash of their content.
func (w work) copyTree(ctx context.Context, tree string, progress io.Writer) (string, error) {
	start := time.Now()
	cachefile.Note(progress, "build: reading %s into %s…", tree, w.src)
	files, err := listTree(ctx, tree)
	if err != nil {
		return "", err
	}
	treeSum, written, err := syncTree(ctx, tree, w.src, files)
	if err != nil {
		return "", err
	}
	cachefile.Note(progress, "build: %d files, %d changed since the last build (%v)",
		len(files), written, time.Since(start).Round(time.Millisecond))
	return treeSum, nil
}

// compile applies the patches to the work copy, makes the config and the
// bzImage, and records in b how long make took and the release it built.
func (w work) compile(ctx context.Context, in inputs, jobs int, b *kernels.Built, progress io.Writer) error {
	for _, pt := range in.patches {
		cachefile.Note(progress, "build: %s %s", pt.dir, pt.name)
		if err := pt.applyTo(ctx, w.src); err != nil {
			return err
		}
	}
	logPath := filepath.Join(w.work, "build.log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	mk := maker{ctx: ctx, src: w.src, out: w.out, ccache: w.ccache, log: log, logPath: logPath, progress: progress}
	cachefile.Note(progress, "build: config (%s base, the suites' fragment%s)", in.base, debugNote(in.debug))
	if err := mk.configure(in.base, in.frags); err != nil {
		return err
	}
	return mk.bzImage(jobs, b)
}

// bzImage runs make -jJOBS bzImage (one job per CPU when jobs is 0) and
// records in b how long it took and the release it built.
func (m *maker) bzImage(jobs int, b *kernels.Built) error {
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	cachefile.Note(m.progress, "build: make -j%d bzImage (log: %s)", jobs, m.logPath)
	start := time.Now()
	if err := m.run(fmt.Sprintf("-j%d", jobs), "bzImage"); err != nil {
		return err
	}
	b.Took = time.Since(start).Round(time.Second)
	release, err := m.output("-s", "kernelrelease")
	if err != nil {
		return err
	}
	b.Release = strings.TrimSpace(release)
	return nil
}

// install copies b's image and config from the object directory out into
// a temporary directory in builds and renames it into place: a build is
// whole in the cache or not there.
func install(b *kernels.Built, builds, out string) error {
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

// linkName points builds/NAME at the build's key directory, atomically.
func linkName(builds, name, key string) error {
	tmp := filepath.Join(builds, "."+name+".link")
	os.Remove(tmp)
	if err := os.Symlink(key, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(builds, name))
}
