package lava

import (
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// TestDefinition: the job boots the kernel with the ramdisk, whose
// overlays are LAVA's test shell, the collection and the modules; its test
// action runs the test definition inline with the kernel's name; its
// context is what LAVA's qemu template takes; and the test action's
// timeout covers every suite's settings timeout.
func TestDefinition(t *testing.T) {
	testdef, err := os.ReadFile("../../../lava/xmitcheck-kselftest.yaml")
	assert.NilError(t, err)
	k := &kernels.Kernel{Name: "debian:7.3", Release: "7.3.4+deb13-amd64", PackageVersion: "7.3.4-1~bpo13+1",
		Vmlinuz: "/cache/debian-7.3/boot/vmlinuz-7.3.4+deb13-amd64"}
	j := Job{Kernel: k, Catalog: true, Dir: "/jobs/a b", Modules: true, TestDef: testdef,
		Suites: []string{"devmap", "qdisc", "tun", "vhost"}, Timeout: 300, CPUs: 2, MemoryMB: 1024}
	def, err := j.Definition()
	assert.NilError(t, err)
	var got struct {
		DeviceType string         `yaml:"device_type"`
		Context    map[string]any `yaml:"context"`
		Actions    []map[string]struct {
			Images      map[string]map[string]any `yaml:"images"`
			Method      string                    `yaml:"method"`
			Prompts     []string                  `yaml:"prompts"`
			Timeout     map[string]int            `yaml:"timeout"`
			Definitions []map[string]any          `yaml:"definitions"`
		} `yaml:"actions"`
	}
	assert.NilError(t, yaml.Unmarshal(def, &got))
	assert.Check(t, is.Equal(got.DeviceType, "qemu"))
	assert.Check(t, is.Equal(got.Context["arch"], "amd64"))
	assert.Check(t, is.Equal(got.Context["no_kvm"], true))
	assert.Check(t, is.DeepEqual(got.Context["extra_options"], []any{"-smp 2", "-cpu max", "-accel tcg,thread=multi"}))
	assert.Assert(t, is.Len(got.Actions, 3))

	images := got.Actions[0]["deploy"].Images
	assert.Check(t, is.Equal(images["kernel"]["url"], "file:///jobs/a%20b/vmlinuz-7.3.4+deb13-amd64"))
	assert.Check(t, is.Contains(images["kernel"]["image_arg"], vmtest.GuestTuning))
	assert.Check(t, is.Equal(images["ramdisk"]["format"], "cpio.newc"))
	overlays := images["ramdisk"]["overlays"].(map[string]any)
	assert.Check(t, is.Equal(overlays["lava"], true))
	assert.Check(t, is.Equal(overlays["kselftest"].(map[string]any)["path"], TreePath))
	assert.Check(t, is.Equal(overlays["modules"].(map[string]any)["url"], "file:///jobs/a%20b/modules.tar"))

	assert.Check(t, is.DeepEqual(got.Actions[1]["boot"].Prompts, []string{Prompt}))
	test := got.Actions[2]["test"]
	assert.Check(t, test.Timeout["minutes"] >= 4*300/60, "the test action outlasts every suite's timeout")
	d := test.Definitions[0]
	assert.Check(t, is.Equal(d["from"], "inline"))
	assert.Check(t, is.Equal(d["name"], TestDefName))
	assert.Check(t, is.Equal(d["parameters"].(map[string]any)["XMITCHECK_KERNEL"], "debian:7.3"))
	steps := d["repository"].(map[string]any)["run"].(map[string]any)["steps"].([]any)
	assert.Check(t, is.Contains(steps[len(steps)-1], "xmitcheck-kselftest.sh"))

	j.Catalog, j.Modules = false, false
	def, err = j.Definition()
	assert.NilError(t, err)
	assert.Check(t, !strings.Contains(string(def), "modules.tar"), "no modules, no overlay")
	assert.Check(t, is.Contains(string(def), `XMITCHECK_KERNEL: ""`), "a build is judged by its release, or not")

	j.TestDef = []byte("run: [unclosed")
	_, err = j.Definition()
	assert.ErrorContains(t, err, "the test definition")
}

// TestDeviceDictionary is LAVA's qemu device type, nothing of ours but
// what a lab's device sets itself.
func TestDeviceDictionary(t *testing.T) {
	d := DeviceDictionary()
	assert.Check(t, is.Contains(d, "{% extends 'qemu.jinja2' %}"))
	assert.Check(t, !strings.Contains(d, "no_kvm"), "the job's context says it, as for a lab's device")
}
