package vmtest

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// qbootFile is the firmware both backends boot guests with when qemu has
// it (Debian's qemu-system-data ships it). qboot's MP table lists every
// vCPU, so a kernel built without ACPI (kernels build's minimal base) runs
// on all of them; SeaBIOS's, qemu's default, lists only the boot CPU under
// TCG. qboot hands the guest qemu's ACPI tables as SeaBIOS does; the boot
// takes as long (debian:7.3, TCG: within this machine's noise).
const qbootFile = "qboot.rom"

var (
	firmwareMu    sync.Mutex
	firmwareFound = map[string]string{}
	firmwareWarn  sync.Once
)

// firmware returns the path of qboot in the data directories of qemu (the
// binary's path), or "" when it has none and qemu's default BIOS boots
// the guest; then it warns once on warn.
func firmware(qemu string, warn io.Writer) string {
	firmwareMu.Lock()
	defer firmwareMu.Unlock()
	p, ok := firmwareFound[qemu]
	if !ok {
		p = findFirmware(qemu)
		firmwareFound[qemu] = p
	}
	if p == "" {
		firmwareWarn.Do(func() {
			io.WriteString(warn, "xmitcheck: warning: qemu has no "+qbootFile+
				" (Debian: qemu-system-data): guests boot with its default BIOS, and a kernel built without"+
				" ACPI (kernels build's default base) gets one vCPU under TCG\n")
		})
	}
	return p
}

// findFirmware asks qemu for its data directories (-L help) and returns
// the first qboot image in them. vng splits its --qemu-opts at spaces, so
// a path with one is not used.
func findFirmware(qemu string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, qemu, "-L", "help").Output()
	if err != nil {
		return ""
	}
	for _, dir := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		p := filepath.Clean(filepath.Join(strings.TrimSpace(dir), qbootFile))
		if strings.ContainsAny(p, " \t") {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}
