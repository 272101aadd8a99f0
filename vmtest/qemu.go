package vmtest

import (
	"fmt"
	"strings"

	"github.com/xmitcheck/xmitcheck/vmtest/guest"
)

// qemuConfig is everything the native backend's qemu command line depends
// on.
type qemuConfig struct {
	Kernel, Initrd string
	// Accel is "kvm" or "tcg".
	Accel string
	// SingleThread is Job.SingleThreadTCG.
	SingleThread bool
	CPUs         int
	MemoryMB     int
	// OutSock and CtlSock are unix sockets the host listens on; qemu
	// connects to them as the backends of the two virtio-serial ports.
	OutSock, CtlSock string
	// Append is added to the kernel command line.
	Append string
	// BIOS is the firmware image (qboot); empty is qemu's default.
	BIOS string
}

// kernelCmdline is the base command line: the console on the first serial
// port; panic=-1 reboots at once, and -no-reboot turns that into an exit;
// loglevel=5 after quiet keeps boot chatter off the slow serial port but
// still shows warnings (WARN, lockdep) and everything worse.
//
// tsc=reliable keeps the clocksource watchdog from declaring the TSC
// unstable when a TCG vCPU thread is descheduled on a busy host. That
// verdict flips a static key (__sched_clock_stable) at run time, and under
// multi-threaded TCG the other vCPU can still run the int3 of the live
// patch after it finished: seen here as "Oops: int3" in sched_clock_cpu
// and a panic, in both the native and the vng backend.
//
// no_timer_check skips the boot's test of the IO-APIC timer (check_timer),
// which counts timer ticks over a busy loop: a TCG vCPU starved by a busy
// host misses them and the boot panics "IO-APIC + timer doesn't work!".
// KVM guests skip it already (arch/x86/kernel/kvm.c sets it).
//
// mitigations=off: the guest is a throwaway test VM, and the suites judge
// what tun, vhost, the qdisc layer and devmap do, which no speculation
// mitigation changes. Those of Debian's kernels (page-table isolation's
// CR3 switch at every kernel entry flushes TCG's software TLB, retpolines,
// return thunks) cost the emulator most: ./suites/devmap on debian:7.3
// took 34 s instead of 76 s, and the boot 4.6 s instead of 7.8 s.
const kernelCmdline = "console=ttyS0 panic=-1 quiet loglevel=5 " + GuestTuning + " rdinit=/init"

// GuestTuning is what both backends, and the LAVA job, add to the command line (see
// kernelCmdline).
const GuestTuning = "tsc=reliable no_timer_check mitigations=off"

// qemuArgs is the qemu-system-x86_64 argv (without argv[0]). The console
// goes to qemu's stdout; no default devices, no network, no display.
func qemuArgs(c qemuConfig) []string {
	args := []string{
		"-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
		"-m", fmt.Sprint(c.MemoryMB), "-smp", fmt.Sprint(c.CPUs),
	}
	if c.BIOS != "" {
		args = append(args, "-bios", c.BIOS)
	}
	switch c.Accel {
	case "kvm":
		args = append(args, "-accel", "kvm", "-cpu", "host")
	default:
		args = append(args, "-accel", "tcg,thread="+tcgThread(c.SingleThread), "-cpu", "max")
	}
	cmdline := kernelCmdline
	if c.Append != "" {
		cmdline += " " + strings.TrimSpace(c.Append)
	}
	args = append(args,
		"-kernel", c.Kernel, "-initrd", c.Initrd, "-append", cmdline,
		"-serial", "stdio", "-nic", "none",
		"-device", "virtio-serial-pci,id=vs",
		"-chardev", "socket,id=out,path="+c.OutSock,
		"-device", "virtserialport,bus=vs.0,chardev=out,name="+guest.OutPort,
		"-chardev", "socket,id=ctl,path="+c.CtlSock,
		"-device", "virtserialport,bus=vs.0,chardev=ctl,name="+guest.CtlPort,
	)
	return args
}

func tcgThread(single bool) string {
	if single {
		return "single"
	}
	return "multi"
}
