package ksft

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/kernels"
)

// Module is how a module a suite needs stands on the running kernel.
type Module struct {
	Name string
	// How says it: "loaded", "built in", "loaded from PATH", or why the
	// kernel has none (the tests' probes then decide).
	How string
	// Unloadable, when set, says why the kernel builds it as a module that
	// cannot be loaded here: the suite cannot be tested.
	Unloadable string
}

// Line is the module's line for the test's output.
func (m Module) Line() string {
	if m.Unloadable != "" {
		return "module " + m.Name + ": cannot load: " + m.Unloadable
	}
	return "module " + m.Name + ": " + m.How
}

// System is where the running kernel's modules and config are read and
// how a module is loaded; Running is the real one.
type System struct {
	// Sys is /sys, Modules the directory of the release's modules
	// (/lib/modules/RELEASE), Configs the kernel configs to try in order.
	Sys, Modules string
	Configs      []string
	// Load loads a module file (the kernel's init_module).
	Load func(path string) error
}

// Running is the running kernel of release.
func Running(release string) System {
	return System{
		Sys:     "/sys",
		Modules: filepath.Join("/lib/modules", release),
		Configs: []string{"/proc/config.gz", filepath.Join("/boot", "config-"+release),
			filepath.Join("/lib/modules", release, "config")},
		Load: loadModule,
	}
}

// LoadModules loads each module names asks for that the kernel builds as a
// module and has not loaded, its dependencies first, from s.Modules (its
// modules.dep), and says how each stands. A module its config says the
// kernel lacks is no error: the tests probe what they need and report it.
func (s System) LoadModules(names []string) []Module {
	config := s.config()
	builtin := s.listed("modules.builtin")
	var out []Module
	for _, name := range names {
		name = strings.ReplaceAll(name, "-", "_")
		m := Module{Name: name}
		opt := kernels.ModuleOption(name)
		switch {
		case s.loaded(name):
			m.How = "loaded"
		case builtin[name]:
			m.How = "built in"
		case config != nil && config[opt] == "y":
			m.How = "built in (" + opt + "=y)"
		default:
			m.How, m.Unloadable = s.load(name, config, opt)
		}
		out = append(out, m)
	}
	return out
}

// load loads name and its dependencies from modules.dep, or says why the
// kernel has no such module, or why it cannot be loaded.
func (s System) load(name string, config map[string]string, opt string) (how, unloadable string) {
	mods, missing, err := kernels.ModuleClosure(s.Modules, []string{name})
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", err.Error()
	case err == nil && len(missing) == 0:
		for _, m := range mods {
			if s.loaded(m.Name) {
				continue
			}
			if err := s.Load(m.Path); err != nil {
				return "", fmt.Sprintf("%s: %v", m.Path, err)
			}
		}
		return "loaded from " + mods[len(mods)-1].Path, ""
	case config != nil && config[opt] == "m":
		return "", fmt.Sprintf("%s=m, but %s has no %s module: install the kernel's modules there", opt, s.Modules, name)
	case config != nil:
		return "not in this kernel (" + opt + " is not set): the tests' probes decide", ""
	case err == nil:
		return "not in this kernel (not in " + s.Modules + "'s modules.dep nor modules.builtin): the tests' probes decide", ""
	}
	return "cannot tell (no " + s.Modules + ", no kernel config): the tests' probes decide", ""
}

// loaded reports whether the kernel has name loaded (or built in with a
// /sys/module entry of its own).
func (s System) loaded(name string) bool {
	_, err := os.Stat(filepath.Join(s.Sys, "module", name))
	return err == nil
}

// config is the first kernel config of s.Configs that reads; nil when none.
func (s System) config() map[string]string {
	for _, p := range s.Configs {
		if c, err := kernels.ReadConfig(p); err == nil {
			return c
		}
	}
	return nil
}

// listed reads a module list of s.Modules (modules.builtin: paths of
// built-in modules) as a set of names.
func (s System) listed(file string) map[string]bool {
	data, err := os.ReadFile(filepath.Join(s.Modules, file))
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for f := range strings.FieldsSeq(string(data)) {
		base := filepath.Base(f)
		if i := strings.Index(base, ".ko"); i >= 0 {
			base = base[:i]
		}
		out[strings.ReplaceAll(base, "-", "_")] = true
	}
	return out
}

// Unloadable lists the modules of mods that cannot be loaded, one line each.
func Unloadable(mods []Module) []string {
	var out []string
	for _, m := range mods {
		if m.Unloadable != "" {
			out = append(out, m.Line())
		}
	}
	return slices.Clip(out)
}
