package ksft

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// system is a running kernel laid out in a temporary directory: /sys/module
// entries of loaded, a modules directory with modules.dep and
// modules.builtin (when dep is not empty), a config; its loads are
// recorded, and fail for a file named in fail.
func system(t *testing.T, loaded []string, dep, builtin, config string, fail string) (System, *[]string) {
	t.Helper()
	root := t.TempDir()
	for _, m := range loaded {
		assert.NilError(t, os.MkdirAll(filepath.Join(root, "sys", "module", m), 0o755))
	}
	s := System{Sys: filepath.Join(root, "sys"), Modules: filepath.Join(root, "lib", "modules", "7.3.4")}
	if dep != "" {
		assert.NilError(t, os.MkdirAll(s.Modules, 0o755))
		assert.NilError(t, os.WriteFile(filepath.Join(s.Modules, "modules.dep"), []byte(dep), 0o644))
		assert.NilError(t, os.WriteFile(filepath.Join(s.Modules, "modules.builtin"), []byte(builtin), 0o644))
	}
	if config != "" {
		s.Configs = []string{filepath.Join(root, "nothing"), filepath.Join(root, "config")}
		assert.NilError(t, os.WriteFile(s.Configs[1], []byte(config), 0o644))
	}
	var loads []string
	s.Load = func(path string) error {
		if filepath.Base(path) == fail {
			return errors.New("init_module: exec format error")
		}
		loads = append(loads, filepath.Base(path))
		return nil
	}
	return s, &loads
}

// TestLoadModules: a module loaded or built in is left alone; one in
// modules.dep is loaded after its dependencies; one the config says the
// kernel lacks is the probes' to report; one the config builds as a module
// without a file, or that fails to load, cannot be tested.
func TestLoadModules(t *testing.T) {
	dep := "kernel/drivers/net/tun.ko.xz:\n" +
		"kernel/drivers/vhost/vhost_net.ko.xz: kernel/drivers/net/tun.ko.xz kernel/drivers/vhost/vhost.ko.xz\n" +
		"kernel/drivers/vhost/vhost.ko.xz:\n" +
		"kernel/net/sched/cls_bpf.ko.xz:\n"
	config := "CONFIG_VETH=y\nCONFIG_NET_SCH_INGRESS=m\nCONFIG_VHOST_NET=m\nCONFIG_TUN=m\nCONFIG_NET_CLS_BPF=m\n"
	s, loads := system(t, []string{"tun"}, dep, "kernel/net/packet/af_packet.ko\n", config, "cls_bpf.ko.xz")
	mods := s.LoadModules([]string{"tun", "vhost-net", "af_packet", "veth", "sch_fq_codel", "sch_ingress", "cls_bpf"})
	var lines []string
	for _, m := range mods {
		lines = append(lines, m.Line())
	}
	assert.Check(t, is.DeepEqual(lines, []string{
		"module tun: loaded",
		"module vhost_net: loaded from " + filepath.Join(s.Modules, "kernel/drivers/vhost/vhost_net.ko.xz"),
		"module af_packet: built in",
		"module veth: built in (CONFIG_VETH=y)",
		"module sch_fq_codel: not in this kernel (CONFIG_NET_SCH_FQ_CODEL is not set): the tests' probes decide",
		"module sch_ingress: cannot load: CONFIG_NET_SCH_INGRESS=m, but " + s.Modules +
			" has no sch_ingress module: install the kernel's modules there",
		"module cls_bpf: cannot load: " + filepath.Join(s.Modules, "kernel/net/sched/cls_bpf.ko.xz") +
			": init_module: exec format error",
	}))
	assert.Check(t, is.DeepEqual(*loads, []string{"vhost.ko.xz", "vhost_net.ko.xz"}),
		"dependencies first; tun, loaded already, not again")
	assert.Check(t, is.Len(Unloadable(mods), 2))
}

// TestLoadModulesWithoutConfig: without a config, modules.dep and
// modules.builtin say what the kernel has; without them either, nothing
// can be told and the probes decide.
func TestLoadModulesWithoutConfig(t *testing.T) {
	s, _ := system(t, nil, "kernel/drivers/net/tun.ko:\n", "", "", "")
	mods := s.LoadModules([]string{"veth"})
	assert.Check(t, is.Equal(mods[0].How,
		"not in this kernel (not in "+s.Modules+"'s modules.dep nor modules.builtin): the tests' probes decide"))
	assert.Check(t, is.Equal(mods[0].Unloadable, ""))

	s, loads := system(t, nil, "", "", "", "")
	mods = s.LoadModules([]string{"tun"})
	assert.Check(t, is.Equal(mods[0].How, "cannot tell (no "+s.Modules+", no kernel config): the tests' probes decide"))
	assert.Check(t, is.Len(Unloadable(mods), 0))
	assert.Check(t, is.Len(*loads, 0))
}
