package guest

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// mounts are the pseudo filesystems a test may need, in mount order. /tmp
// is the initramfs's own (its root is a tmpfs already): a tmpfs over it
// would hide what the initramfs put there, the test packages' sources
// when the tests were built from a checkout under /tmp.
var mounts = []struct {
	fstype, target string
	required       bool
}{
	{"proc", "/proc", true},
	{"sysfs", "/sys", true},
	{"devtmpfs", "/dev", true},
	{"tmpfs", "/run", false},
	{"devpts", "/dev/pts", false},
	{"tmpfs", "/dev/shm", false},
	{"bpf", "/sys/fs/bpf", false},
	{"debugfs", "/sys/kernel/debug", false},
	{"tracefs", "/sys/kernel/tracing", false},
	{"cgroup2", "/sys/fs/cgroup", false},
}

// mountAll mounts every pseudo filesystem. An optional one that fails is
// logged on the console; a required one is an error.
func mountAll() error {
	for _, m := range mounts {
		err := os.MkdirAll(m.target, 0o755)
		if err == nil {
			err = unix.Mount(m.fstype, m.target, m.fstype, 0, "")
		}
		if err != nil && !errors.Is(err, unix.EBUSY) {
			if m.required {
				return fmt.Errorf("mount %s on %s: %w", m.fstype, m.target, err)
			}
			logf("mount %s on %s: %v (tests that need it will skip)", m.fstype, m.target, err)
		}
	}
	return nil
}

// loadModules loads each module in order and reports each result. A module
// that is already loaded counts as loaded.
func loadModules(mods []Module) []Event {
	var evs []Event
	for _, m := range mods {
		ev := Event{Ev: EvModule, Name: m.Name}
		if err := loadModule(m.Path); err != nil {
			ev.Err = err.Error()
			logf("load module %s: %v", m.Name, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func loadModule(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.FinitModule(fd, "", 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("finit_module: %w", err)
	}
	return nil
}

// loopbackUp sets IFF_UP on lo, as every init does.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// powerOff syncs and powers the VM off. qemu runs with -no-reboot, so even
// a failing power-off ends the VM: init returning panics the kernel, and
// panic=-1 reboots it, which qemu turns into an exit. A kernel without
// ACPI halts instead, and the host ends the VM when the console says so.
func powerOff() {
	unix.Sync()
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		logf("power off: %v", err)
	}
}

// portsDir lists the virtio-serial ports with their names (no udev here).
const portsDir = "/sys/class/virtio-ports"

// findPorts maps port names to /dev nodes.
func findPorts() map[string]string {
	found := map[string]string{}
	ents, _ := os.ReadDir(portsDir)
	for _, e := range ents {
		name, err := os.ReadFile(portsDir + "/" + e.Name() + "/name")
		if err == nil {
			found[strings.TrimSpace(string(name))] = "/dev/" + e.Name()
		}
	}
	return found
}
