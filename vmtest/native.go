package vmtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/xmitcheck/xmitcheck/kernels"
)

// NativeOptions configure the native backend.
type NativeOptions struct {
	// Init is the static xmitcheck binary that runs as the guest's PID 1
	// (CGO_ENABLED=0 go build ./cmd/xmitcheck).
	Init string
	// QEMU is the qemu-system-x86_64 to run; empty means from PATH.
	QEMU string
	// CacheDir holds the KVM verdict; empty means the user cache dir.
	CacheDir string
	// Append is added to the guest kernel command line.
	Append string
	// Warn receives one-line warnings (the KVM fallback); nil is stderr.
	Warn io.Writer
}

// Native boots kernels in qemu with an initramfs built for each job and
// xmitcheck itself as init.
type Native struct {
	opts NativeOptions
}

// NewNative returns the native backend. Missing pieces (qemu, the init
// binary) are reported by Run, each with what to do about it.
func NewNative(opts NativeOptions) *Native {
	opts.Warn, opts.CacheDir = commonDefaults(opts.Warn, opts.CacheDir)
	return &Native{opts: opts}
}

// commonDefaults fills the options every VM backend has: warnings go to
// stderr, the cache (KVM verdict, extracted images) under the user's.
func commonDefaults(warn io.Writer, cacheDir string) (io.Writer, string) {
	if warn == nil {
		warn = os.Stderr
	}
	if cacheDir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			cacheDir = filepath.Join(d, "xmitcheck", "vmtest")
		}
	}
	return warn, cacheDir
}

func (n *Native) Name() string { return "native" }

// kvmProbeBoot bounds the first boot under KVM when there is no verdict:
// a working KVM guest reaches init in a second or two.
const kvmProbeBoot = 10 * time.Second

// errNoHello marks a boot that never reached the guest runner.
var errNoHello = errors.New("guest runner never started")

// Run boots k with an initramfs holding job and streams the results to
// sink.
func (n *Native) Run(ctx context.Context, k *kernels.Kernel, job Job, sink Sink) (*Outcome, error) {
	job = job.withDefaults()
	if k.Host || k.Vmlinuz == "" {
		return nil, fmt.Errorf("kernel %s has no image to boot: use the host backend for the running kernel", k.Name)
	}
	if _, err := os.Stat(k.Vmlinuz); err != nil {
		return nil, fmt.Errorf("kernel image: %w: fetch the kernel again (xmitcheck kernels fetch %s)", err, k.Name)
	}
	qemu, err := n.qemu()
	if err != nil {
		return nil, err
	}
	if n.opts.Init == "" {
		return nil, errors.New(
			"native backend: no guest init binary given (build it with CGO_ENABLED=0 go build ./cmd/xmitcheck)")
	}
	choice, err := chooseAccel(job.Accel, n.opts.CacheDir)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "xmitcheck-vm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	initrd := filepath.Join(dir, "initramfs.cpio")
	ir, err := buildInitramfs(initrd, n.opts.Init, k, job)
	if err != nil {
		return nil, fmt.Errorf("initramfs for %s: %w", k.Name, err)
	}
	cfg := qemuConfig{
		Kernel: bootImage(k.Vmlinuz, n.opts.CacheDir), Initrd: initrd, CPUs: job.CPUs, MemoryMB: job.MemoryMB,
		OutSock: filepath.Join(dir, "out.sock"), CtlSock: filepath.Join(dir, "ctl.sock"),
		Append: n.opts.Append, SingleThread: job.SingleThreadTCG, BIOS: firmware(qemu, n.opts.Warn),
	}
	bootOne := func(accel string, job Job, probe bool) (*Outcome, error) {
		cfg.Accel = accel
		return boot(ctx, qemu, cfg, job, ir, sink, probe)
	}
	return bootAccel(choice, job, kvmProbeBoot, n.opts.CacheDir, n.opts.Warn, bootOne)
}

func (n *Native) qemu() (string, error) {
	name := n.opts.QEMU
	if name == "" {
		name = "qemu-system-x86_64"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found: install qemu-system-x86 (make deps)", name)
	}
	return p, nil
}

func buildInitramfs(path, init string, k *kernels.Kernel, job Job) (*initramfs, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	ir, err := writeInitramfs(w, init, k, job)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return ir, err
}

// withDefaults fills the zero values of a job.
func (j Job) withDefaults() Job {
	if j.Timeouts.Boot == 0 {
		j.Timeouts.Boot = 60 * time.Second
	}
	if j.Timeouts.Idle == 0 {
		j.Timeouts.Idle = 120 * time.Second
	}
	if j.Timeouts.Overall == 0 {
		j.Timeouts.Overall = 30 * time.Minute
	}
	if j.CPUs == 0 {
		j.CPUs = 2
	}
	if j.MemoryMB == 0 {
		j.MemoryMB = 1024
	}
	return j
}
