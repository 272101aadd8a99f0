package lava

import (
	"compress/gzip"
	"fmt"
	"io"

	"github.com/xmitcheck/xmitcheck/vmtest"
)

// ramdiskInit is the ramdisk's /init: busybox's applets, the pseudo
// filesystems and /dev/stdout (the kselftest runner writes each test's
// output there; devtmpfs has no such link, udev makes it), then a root
// shell on the console for LAVA's test shell. The
// kselftest runner calls `timeout --foreground` when /usr/bin/timeout is
// there, which busybox's lacks: without it the runner lets each test run
// to its own end (the test program bounds itself inside the settings'
// timeout, the job's test action bounds the whole).
const ramdiskInit = `#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
rm -f /usr/bin/timeout
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t tmpfs tmpfs /run
ip link set lo up
hostname xmitcheck
echo "xmitcheck ramdisk: Linux $(uname -r), a shell on the console"
exec setsid cttyhack sh -l
`

// Prompt is the ramdisk shell's prompt, busybox's for root in /.
const Prompt = "/ # "

// WriteRamdisk writes the job's ramdisk, a gzipped newc cpio: busybox
// (a static one, from the file at busybox) and an init that gives a
// shell on the console. LAVA adds its test shell and the job's overlays
// (the collection, the modules) to it.
func WriteRamdisk(w io.Writer, busybox string) error {
	if err := vmtest.CheckStatic(busybox); err != nil {
		return fmt.Errorf("busybox: %w (Debian's busybox-static has a static one: make deps DEPS=lava)", err)
	}
	zw := gzip.NewWriter(w)
	c := vmtest.NewCPIO(zw)
	for _, d := range []string{"bin", "dev", "etc", "opt", "tmp"} {
		if err := c.Dir(d); err != nil {
			return err
		}
	}
	if err := c.CharDev("dev/console", 5, 1); err != nil {
		return err
	}
	if err := c.Copy("bin/busybox", 0o755, busybox); err != nil {
		return fmt.Errorf("busybox: %w", err)
	}
	if err := c.Bytes("init", 0o755, []byte(ramdiskInit)); err != nil {
		return err
	}
	if err := c.Close(); err != nil {
		return err
	}
	return zw.Close()
}
