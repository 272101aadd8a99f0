package vmtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/kernels"
)

// Host runs the binaries directly on the running kernel, one after the
// other, with the same timeouts as a VM and kernel reports read from
// /dev/kmsg. Every suite test works in its own network namespace, so the
// host is left as it was. Job.Modules, Accel, CPUs and MemoryMB do not
// apply.
type Host struct{}

func (Host) Name() string { return "host" }

// Run runs job's binaries on this machine. It needs root.
func (Host) Run(ctx context.Context, k *kernels.Kernel, job Job, sink Sink) (*Outcome, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the host backend needs root: run as root, or boot a kernel in a VM")
	}
	job = job.withDefaults()
	out := &Outcome{Accel: "none", Modules: map[string]string{}}
	start := time.Now()
	ctx, cancel := context.WithDeadline(ctx, start.Add(job.Timeouts.Overall))
	defer cancel()
	kmsg := watchKmsg()
	defer kmsg.Close()
	var err error
	for i, b := range job.Binaries {
		if i == 0 {
			out.BootToFirstTest = time.Since(start)
		}
		if err = runOnHost(ctx, b, job, sink, kmsg); err != nil {
			break
		}
	}
	for _, s := range kmsg.Drain() {
		sink.Splat(s)
	}
	out.Total = time.Since(start)
	out.Console = kmsg.Tail()
	return out, err
}

// runOnHost runs one binary in its own process group and scratch
// directory, streaming its output, until it exits or a timeout kills it.
func runOnHost(ctx context.Context, b Binary, job Job, sink Sink, kmsg *kmsgWatcher) error {
	dir, err := os.MkdirTemp("", "xmitcheck-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(b.Path, b.Args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), job.Env...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	feature.Mark(feature.BinaryStart, b.Name)
	defer feature.Mark(feature.BinaryExit, b.Name)
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("start %s: %w", b.Path, err)
	}
	sink.Start(b)
	kill := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	defer kill()
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		// Leftover children die with the binary; its output is read
		// for a bounded time only.
		kill()
		r.SetReadDeadline(time.Now().Add(2 * time.Second))
		close(exited)
	}()
	chunks := make(chan []byte, 16)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 64<<10)
			n, err := r.Read(buf)
			if n > 0 {
				chunks <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	idle := time.NewTimer(job.Timeouts.Idle)
	defer idle.Stop()
	var reason error
	for chunks != nil {
		select {
		case p, ok := <-chunks:
			if !ok {
				chunks = nil
				continue
			}
			sink.Output(b, p)
			idle.Reset(job.Timeouts.Idle)
		case s := <-kmsg.C:
			sink.Splat(s)
		case <-idle.C:
			reason = fmt.Errorf(
				"%w: no output for %v while running %s: a hang, or a silent test (raise --idle-timeout); killed it",
				ErrCrash, job.Timeouts.Idle, b.Name)
			kill()
		case <-ctx.Done():
			if reason == nil {
				reason = fmt.Errorf("%w: %s stopped: %w", ErrCrash, b.Name, ctx.Err())
			}
			kill()
		}
	}
	<-exited
	if reason != nil {
		return reason
	}
	sink.Exit(b, exitStatus(cmd.ProcessState))
	return nil
}

// exitStatus is the shell's view of a status: the code, or 128+signal.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
