package vmtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest/guest"
)

// VngOptions configure the virtme-ng backend.
type VngOptions struct {
	// Init is the static xmitcheck binary; in the guest it runs the job
	// (guest.EnvSpec set) and writes framed streams to its stdout.
	Init string
	// Vng is the vng command; empty means from PATH.
	Vng string
	// CacheDir holds the per-run directories the guest reads (the guest
	// sees the host's root filesystem, but not its /tmp) and the KVM
	// verdict; empty means the user cache dir.
	CacheDir string
	// Warn receives one-line warnings; nil is stderr.
	Warn io.Writer
}

// Vng runs jobs through virtme-ng (vng --run KERNEL --exec ...), the way
// kernel maintainers already boot their builds. The guest runner is the
// same as the native backend's, so a Sink sees the same calls.
type Vng struct {
	opts VngOptions
}

// NewVng returns the vng backend; Run reports what is missing.
func NewVng(opts VngOptions) *Vng {
	opts.Warn, opts.CacheDir = commonDefaults(opts.Warn, opts.CacheDir)
	return &Vng{opts: opts}
}

func (n *Vng) Name() string { return "vng" }

const (
	// vngBoot is the default boot timeout: virtme-ng's init (udev,
	// systemd-tmpfiles, 9p root) takes 40–55 s under TCG here, more on a
	// busy host.
	vngBoot = 5 * time.Minute
	// vngProbeBoot bounds the first vng boot under KVM without a verdict.
	vngProbeBoot = 30 * time.Second
)

// Run boots k through vng and runs job in it.
func (n *Vng) Run(ctx context.Context, k *kernels.Kernel, job Job, sink Sink) (*Outcome, error) {
	if job.Timeouts.Boot == 0 {
		job.Timeouts.Boot = vngBoot
	}
	job = job.withDefaults()
	if k.Host || k.Vmlinuz == "" {
		return nil, fmt.Errorf("kernel %s has no image to boot: use the host backend for the running kernel", k.Name)
	}
	vng := n.opts.Vng
	if vng == "" {
		vng = "vng"
	}
	vng, err := exec.LookPath(vng)
	if err != nil {
		return nil, errors.New("vng (virtme-ng) not found: install it (make deps), or use the native backend")
	}
	if n.opts.Init == "" {
		return nil, errors.New(
			"vng backend: no xmitcheck binary given (build it with CGO_ENABLED=0 go build ./cmd/xmitcheck)")
	}
	if k.ModulesDir != "" && filepath.Clean(k.ModulesDir) != filepath.Join(k.Root, "lib", "modules", k.Release) {
		return nil, fmt.Errorf("vng needs the modules at ROOT/lib/modules/%s, but kernel %s has them at %s",
			k.Release, k.Name, k.ModulesDir)
	}
	choice, err := chooseAccel(job.Accel, n.opts.CacheDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(n.opts.CacheDir, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(n.opts.CacheDir, "vng-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	spec, missing, err := shareJob(dir, n.opts.Init, k, job)
	if err != nil {
		return nil, fmt.Errorf("vng job for %s: %w", k.Name, err)
	}
	bootOne := func(accel string, job Job, probe bool) (*Outcome, error) {
		return n.boot(ctx, vng, accel, k, job, spec, missing, sink, probe)
	}
	return bootAccel(choice, job, vngProbeBoot, n.opts.CacheDir, n.opts.Warn, bootOne)
}

// vngArgs is the vng argv (without argv[0]) that runs the guest runner on
// the job in spec, with bios as the firmware when not empty; the kernel's
// console goes to stderr (--verbose). vng's microvm machine, which it
// picks under KVM, finds its PCIe bus through ACPI only: --disable-microvm
// keeps q35, where a kernel built without ACPI finds its devices too.
func vngArgs(k *kernels.Kernel, accel string, job Job, init, spec, bios string) []string {
	args := []string{"--run", k.Vmlinuz, "--user", "root", "--verbose",
		"--cpus", fmt.Sprint(job.CPUs), "--memory", fmt.Sprintf("%dM", job.MemoryMB),
		"--append", GuestTuning, "--disable-microvm"}
	var opts []string
	if accel != "kvm" {
		args = append(args, "--disable-kvm")
		opts = append(opts, "-accel tcg,thread="+tcgThread(job.SingleThreadTCG))
	}
	if bios != "" {
		opts = append(opts, "-bios "+bios)
	}
	if len(opts) > 0 {
		args = append(args, "--qemu-opts="+strings.Join(opts, " "))
	}
	return append(args, "--exec", guest.EnvSpec+"="+shellQuote(spec)+" "+shellQuote(init))
}

func (n *Vng) boot(ctx context.Context, vng, accel string, k *kernels.Kernel, job Job, spec string, missing []string,
	sink Sink, probe bool) (*Outcome, error) {
	var bios string
	if qemu, err := exec.LookPath("qemu-system-x86_64"); err == nil {
		bios = firmware(qemu, n.opts.Warn)
	}
	cmd := exec.Command(vng, vngArgs(k, accel, job, filepath.Join(filepath.Dir(spec), "xmitcheck"), spec, bios)...)
	cmd.Dir = filepath.Dir(spec)
	// Pipes of our own: exec's StdoutPipe would be closed by the Wait
	// that runs beside the readers.
	stdout, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	stderr, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return nil, err
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = outW, errW
	v := newVM(cmd, sink, job, probe)
	err = v.startCmd()
	outW.Close()
	errW.Close()
	if err != nil {
		return nil, err
	}
	defer v.kill()
	done := make(chan struct{})
	defer close(done)
	out, ctl := readFrames(stdout, done)
	exitErr := v.supervise(ctx, streams{con: readLines(stderr, done), out: out, ctl: ctl}, job.Timeouts)
	return v.outcome(accel, missing), v.verdict(exitErr)
}

// shareJob puts what the guest needs into dir, which the guest sees at the
// same path: the runner, the binaries, the decompressed module closure and
// the spec. It returns the spec's path and the modules with no file.
func shareJob(dir, init string, k *kernels.Kernel, job Job) (string, []string, error) {
	if err := linkOrCopy(init, filepath.Join(dir, "xmitcheck")); err != nil {
		return "", nil, err
	}
	spec := guest.Spec{Env: job.Env}
	for i, b := range job.Binaries {
		p := filepath.Join(dir, fmt.Sprintf("%d-%s", i, filepath.Base(b.Path)))
		if err := linkOrCopy(b.Path, p); err != nil {
			return "", nil, fmt.Errorf("test binary %s: %w", b.Name, err)
		}
		spec.Binaries = append(spec.Binaries, guest.Binary{Name: b.Name, Path: p, Args: b.Args})
	}
	var missing []string
	if k.ModulesDir != "" && len(job.Modules) > 0 {
		mods, miss, err := kernels.ModuleClosure(k.ModulesDir, job.Modules)
		if err != nil {
			return "", nil, err
		}
		missing = miss
		for i, m := range mods {
			data, err := kernels.ReadModule(m.Path)
			if err != nil {
				return "", nil, err
			}
			p := filepath.Join(dir, fmt.Sprintf("%d-%s.ko", i, m.Name))
			if err := os.WriteFile(p, data, 0o644); err != nil {
				return "", nil, err
			}
			spec.Modules = append(spec.Modules, guest.Module{Name: m.Name, Path: p})
		}
	}
	b, err := json.Marshal(&spec)
	if err != nil {
		return "", nil, err
	}
	p := filepath.Join(dir, "spec.json")
	return p, missing, os.WriteFile(p, b, 0o644)
}

func linkOrCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// shellQuote quotes s for the guest's sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// readFrames splits the runner's framed stdout into the two streams. A
// broken frame ends both; the verdict then says the job did not finish.
func readFrames(r io.Reader, done <-chan struct{}) (<-chan guest.Frame, <-chan guest.Event) {
	out := make(chan guest.Frame, 64)
	ctl := make(chan guest.Event, 64)
	go func() {
		defer close(out)
		defer close(ctl)
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			f, err := guest.ReadFrame(br)
			if err != nil {
				if err != io.EOF {
					send(ctl, guest.Event{Ev: guest.EvError, Err: err.Error()}, done)
				}
				return
			}
			if f.Kind == guest.FrameOut {
				if !send(out, f, done) {
					return
				}
				continue
			}
			var ev guest.Event
			if err := json.Unmarshal(f.Data, &ev); err != nil {
				ev = guest.Event{Ev: guest.EvError, Err: fmt.Sprintf("bad control frame %q: %v", f.Data, err)}
			}
			if !send(ctl, ev, done) {
				return
			}
		}
	}()
	return out, ctl
}
