package vmtest

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestQEMUArgs(t *testing.T) {
	c := qemuConfig{Kernel: "/k", Initrd: "/i", CPUs: 2, MemoryMB: 1024, OutSock: "/o.sock", CtlSock: "/c.sock"}
	for _, tc := range []struct {
		name, accel string
		single      bool
		want        []string
	}{
		{"tcg", "tcg", false, []string{"-accel", "tcg,thread=multi", "-cpu", "max"}},
		{"tcg-single", "tcg", true, []string{"-accel", "tcg,thread=single", "-cpu", "max"}},
		{"kvm", "kvm", false, []string{"-accel", "kvm", "-cpu", "host"}},
		{"kvm-single", "kvm", true, []string{"-accel", "kvm", "-cpu", "host"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.Accel, c.SingleThread = tc.accel, tc.single
			args := qemuArgs(c)
			line := " " + strings.Join(args, " ") + " "
			assert.Check(t, strings.Contains(line, " "+strings.Join(tc.want, " ")+" "), line)
			for _, want := range []string{
				"-nodefaults", "-nographic", "-no-reboot", "-m 1024", "-smp 2",
				"-kernel /k", "-initrd /i", "-serial stdio",
				"-chardev socket,id=out,path=/o.sock",
				"-device virtserialport,bus=vs.0,chardev=out,name=xmitcheck.out",
				"-chardev socket,id=ctl,path=/c.sock",
				"-device virtserialport,bus=vs.0,chardev=ctl,name=xmitcheck.ctl",
			} {
				assert.Check(t, strings.Contains(line, " "+want+" "), "missing %q in %s", want, line)
			}
			appendArg := args[indexOf(args, "-append")+1]
			for _, want := range []string{"console=ttyS0", "panic=-1", "rdinit=/init"} {
				assert.Check(t, is.Contains(strings.Fields(appendArg), want))
			}
		})
	}
}

func TestQEMUArgsBIOS(t *testing.T) {
	args := qemuArgs(qemuConfig{Accel: "tcg", BIOS: "/q/qboot.rom"})
	assert.Check(t, is.Equal(args[indexOf(args, "-bios")+1], "/q/qboot.rom"))
	assert.Check(t, is.Equal(indexOf(qemuArgs(qemuConfig{Accel: "tcg"}), "-bios"), -1))
}

func TestQEMUArgsAppend(t *testing.T) {
	args := qemuArgs(qemuConfig{Accel: "tcg", Append: " nokaslr "})
	appendArg := args[indexOf(args, "-append")+1]
	assert.Check(t, strings.HasSuffix(appendArg, " nokaslr"), appendArg)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestVngArgs(t *testing.T) {
	job := Job{}.withDefaults()
	k := fakeModules(t)
	k.Vmlinuz = "/r/boot/vmlinuz-1.0"
	args := vngArgs(k, "tcg", job, "/d/xmitcheck", "/d/it's.json", "")
	line := strings.Join(args, " ")
	assert.Check(t, strings.HasPrefix(line, "--run /r/boot/vmlinuz-1.0 --user root"), line)
	assert.Check(t, is.Contains(args, "--disable-kvm"))
	assert.Check(t, is.Contains(args, "--qemu-opts=-accel tcg,thread=multi"))
	job.SingleThreadTCG = true
	assert.Check(t, is.Contains(vngArgs(k, "tcg", job, "/x", "/s", ""), "--qemu-opts=-accel tcg,thread=single"))
	assert.Check(t, is.Contains(vngArgs(k, "tcg", job, "/x", "/s", "/q/qboot.rom"),
		"--qemu-opts=-accel tcg,thread=single -bios /q/qboot.rom"))
	assert.Check(t, is.Contains(vngArgs(k, "kvm", job, "/x", "/s", "/q/qboot.rom"), "--qemu-opts=-bios /q/qboot.rom"))
	assert.Check(t, is.Contains(args, "--disable-microvm"))
	assert.Check(t, is.Equal(args[len(args)-1], `XMITCHECK_GUEST_SPEC='/d/it'\''s.json' '/d/xmitcheck'`))
	assert.Check(t, !strings.Contains(strings.Join(vngArgs(k, "kvm", job, "/x", "/s", ""), " "), "--disable-kvm"))
}
