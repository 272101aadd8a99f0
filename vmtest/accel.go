package vmtest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// accelChoice is how a run picks its accelerator.
type accelChoice struct {
	// Accel is "kvm" or "tcg".
	Accel string
	// Probe is true when KVM is tried without a verdict for this boot of
	// the machine: a boot that does not reach the guest runner falls back
	// to TCG and records that KVM does not work here.
	Probe bool
}

// chooseAccel resolves "auto", "kvm" and "tcg" ("" is "auto").
func chooseAccel(want, cacheDir string) (accelChoice, error) {
	switch want {
	case "tcg":
		return accelChoice{Accel: "tcg"}, nil
	case "kvm":
		if err := kvmUsable(); err != nil {
			return accelChoice{}, fmt.Errorf("accel kvm: %w: use --accel tcg or auto", err)
		}
		return accelChoice{Accel: "kvm"}, nil
	case "", "auto":
		if kvmUsable() != nil {
			return accelChoice{Accel: "tcg"}, nil
		}
		if v := readVerdict(cacheDir); v != "" {
			return accelChoice{Accel: v}, nil
		}
		return accelChoice{Accel: "kvm", Probe: true}, nil
	}
	return accelChoice{}, fmt.Errorf("accel %q: want auto, kvm or tcg", want)
}

// kvmUsable tells whether /dev/kvm can be opened for writing.
func kvmUsable() error {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// verdictPath keys the KVM verdict by the machine's boot, so a reboot (a
// new kernel, a fixed KVM) probes again.
func verdictPath(cacheDir string) (string, error) {
	id, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return filepath.Join(cacheDir, "kvm-verdict-"+strings.TrimSpace(string(id))), nil
}

func readVerdict(cacheDir string) string {
	p, err := verdictPath(cacheDir)
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(p)
	if v := strings.TrimSpace(string(b)); err == nil && (v == "kvm" || v == "tcg") {
		return v
	}
	return ""
}

func writeVerdict(cacheDir, accel string) error {
	p, err := verdictPath(cacheDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return err
	}
	return writeRename(p, []byte(accel+"\n"))
}

// bootAccel runs boot under choice's accelerator. Where KVM has no verdict
// yet (choice.Probe) it boots under KVM first, bounded by probeBoot: a
// guest that never says hello there makes TCG the verdict until the next
// reboot, with a warning, and boots again under TCG. boot gets the
// accelerator, the job (its boot timeout cut for the probe) and whether
// this boot is the probe.
func bootAccel(choice accelChoice, job Job, probeBoot time.Duration, cacheDir string, warn io.Writer,
	boot func(accel string, job Job, probe bool) (*Outcome, error)) (*Outcome, error) {
	if choice.Probe {
		probeJob := job
		probeJob.Timeouts.Boot = min(job.Timeouts.Boot, probeBoot)
		out, err := boot("kvm", probeJob, true)
		if !errors.Is(err, errNoHello) {
			writeVerdict(cacheDir, "kvm")
			return out, err
		}
		writeVerdict(cacheDir, "tcg")
		fmt.Fprintf(warn, "xmitcheck: warning: a KVM guest did not start here (%v); using TCG until the next reboot\n", err)
		choice.Accel = "tcg"
	}
	return boot(choice.Accel, job, false)
}
