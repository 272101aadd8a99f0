// Package lava runs xmitcheck's kselftest collection in a LAVA lab: the
// job definition for LAVA's qemu device type (the kernel, a ramdisk, the
// collection and the modules as overlays, the test definition inline), a
// device dictionary for a local `lava-run`, and the job's log read back as
// a kernel's results (Read), for the verdict table, the HTML report and
// KCIDB.
package lava

import (
	"bytes"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// Files of a job's directory.
const (
	JobFile       = "job.yaml"
	DeviceFile    = "device.jinja2"
	RamdiskFile   = "ramdisk.cpio.gz"
	CollectionTar = "kselftest.tar"
	ModulesTar    = "modules.tar"
)

// TreePath is where the job puts the collection in the guest.
const TreePath = "/opt/kselftest"

// TestDefName is the test definition's name: LAVA's results name it
// N_xmitcheck-kselftest, N its place in the job.
const TestDefName = "xmitcheck-kselftest"

// Job is one kernel's job.
type Job struct {
	// Kernel is what the job boots; Catalog is set when it is a catalog
	// kernel, whose line of the expectation file the tests take.
	Kernel  *kernels.Kernel
	Catalog bool
	// Dir holds the job's files (the URLs point there).
	Dir string
	// Modules says whether the job has a modules overlay.
	Modules bool
	// TestDef is the test definition's YAML (lava/xmitcheck-kselftest.yaml).
	TestDef []byte
	// Suites are the collection's tests, each given Timeout seconds by its
	// settings.
	Suites  []string
	Timeout int
	// Expect, when set, is an expectation over the collection's.
	Expect string
	// CPUs and MemoryMB size the guest.
	CPUs, MemoryMB int
}

// Definition is the job's definition, LAVA's job YAML. Its context holds
// what LAVA's qemu device-type template takes (arch, no_kvm, memory,
// extra_options): a LAVA server renders its qemu device with it, as
// scripts/lava.sh renders the local one.
func (j Job) Definition() ([]byte, error) {
	var testdef map[string]any
	if err := yaml.Unmarshal(j.TestDef, &testdef); err != nil {
		return nil, fmt.Errorf("the test definition: %w", err)
	}
	overlays := map[string]any{
		"lava":      true,
		"kselftest": map[string]any{"url": j.url(CollectionTar), "format": "tar", "path": TreePath},
	}
	if j.Modules {
		overlays["modules"] = map[string]any{"url": j.url(ModulesTar), "format": "tar", "path": "/"}
	}
	params := map[string]string{"TREE": TreePath, "XMITCHECK_EXPECT": j.Expect, "XMITCHECK_KERNEL": ""}
	if j.Catalog {
		params["XMITCHECK_KERNEL"] = j.Kernel.Name
	}
	cmdline := "console=ttyS0,115200 rdinit=/init panic=-1 " + vmtest.GuestTuning
	// Each suite's settings timeout bounds it; the runner's start and the
	// reports add little: a minute per suite more bounds the test action.
	testMinutes := len(j.Suites)*(j.Timeout/60+1) + 5
	def := definition{
		DeviceType: "qemu",
		JobName:    "xmitcheck kselftest on " + j.Kernel.Label(),
		Timeouts: map[string]any{
			"job":        map[string]int{"minutes": testMinutes + 15},
			"action":     map[string]int{"minutes": 10},
			"connection": map[string]int{"minutes": 2},
		},
		Priority:   "medium",
		Visibility: "public",
		Context: map[string]any{
			"arch":          "amd64",
			"no_kvm":        true,
			"memory":        j.MemoryMB,
			"extra_options": []string{fmt.Sprintf("-smp %d", j.CPUs), "-cpu max", "-accel tcg,thread=multi"},
		},
		Metadata: map[string]string{
			"xmitcheck.kernel":  j.Kernel.Name,
			"xmitcheck.release": j.Kernel.Release,
		},
		Actions: []any{
			map[string]any{"deploy": map[string]any{
				"to":      "tmpfs",
				"timeout": map[string]int{"minutes": 5},
				"images": map[string]any{
					"kernel": map[string]any{
						"url":       j.url(filepath.Base(j.Kernel.Vmlinuz)),
						"image_arg": `-kernel {kernel} -append "` + cmdline + `"`,
					},
					"ramdisk": map[string]any{
						"url":         j.url(RamdiskFile),
						"image_arg":   "-initrd {ramdisk}",
						"compression": "gz",
						"format":      "cpio.newc",
						"overlays":    overlays,
					},
				},
			}},
			map[string]any{"boot": map[string]any{
				"method":  "qemu",
				"media":   "tmpfs",
				"timeout": map[string]int{"minutes": 5},
				"prompts": []string{Prompt},
			}},
			map[string]any{"test": map[string]any{
				"timeout": map[string]int{"minutes": testMinutes},
				"definitions": []any{map[string]any{
					"from":       "inline",
					"name":       TestDefName,
					"path":       "inline/" + TestDefName + ".yaml",
					"repository": testdef,
					"parameters": params,
				}},
			}},
		},
	}
	var b bytes.Buffer
	b.WriteString("# LAVA job: xmitcheck's kselftest collection on " + j.Kernel.Label() + ", written by\n" +
		"# `xmitcheck lava job` (docs/kselftest.md). Run it with `lava-run --device DEVICE.yaml`, or submit it.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(def); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// definition is a LAVA job's top level, in the order LAVA's examples
// keep it.
type definition struct {
	DeviceType string            `yaml:"device_type"`
	JobName    string            `yaml:"job_name"`
	Timeouts   map[string]any    `yaml:"timeouts"`
	Priority   string            `yaml:"priority"`
	Visibility string            `yaml:"visibility"`
	Context    map[string]any    `yaml:"context"`
	Metadata   map[string]string `yaml:"metadata"`
	Actions    []any             `yaml:"actions"`
}

// url is a file:// URL of a file of the job's directory.
func (j Job) url(name string) string {
	return (&url.URL{Scheme: "file", Path: filepath.Join(j.Dir, name)}).String()
}

// DeviceDictionary is the device dictionary of the local qemu device
// lava-run uses: LAVA's own qemu device type, as a LAVA server has it;
// the job's context gives it the rest when it is rendered.
func DeviceDictionary() string {
	return strings.Join([]string{
		"{# xmitcheck's local qemu device for lava-run (scripts/lava.sh renders it with the job's context, #}",
		"{# as a LAVA server renders a device for a job). #}",
		"{% extends 'qemu.jinja2' %}",
		"{% set mac_addr = '52:54:00:12:34:59' %}",
		"",
	}, "\n")
}
