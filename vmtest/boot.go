package vmtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/xmitcheck/xmitcheck/vmtest/guest"
)

const (
	// consoleTail is how many console lines an Outcome keeps.
	consoleTail = 50
	// splatQuiet closes a report the console stopped adding to.
	splatQuiet = time.Second
	// panicGrace bounds the wait for qemu to exit after a panic.
	panicGrace = 10 * time.Second
	// drainGrace bounds the wait for the streams to end after qemu exited
	// or was killed.
	drainGrace = 3 * time.Second
	tick       = 100 * time.Millisecond
)

// vm is one qemu process and what it has produced so far.
type vm struct {
	cmd     *exec.Cmd
	start   time.Time
	console []string
	stderr  bytes.Buffer
	scan    splatScanner
	d       *demux
	sink    Sink
	// held keeps splats of a KVM probe boot until the guest says hello:
	// a boot that falls back to TCG reports nothing.
	probe bool
	held  []Splat
	// reason is why the host stopped the VM, once it did.
	reason error
	exited chan error
}

// boot runs one qemu and returns when it has exited and its streams ended.
func boot(ctx context.Context, qemu string, c qemuConfig, job Job, ir *initramfs, sink Sink,
	probe bool) (*Outcome, error) {
	lnOut, err := net.Listen("unix", c.OutSock)
	if err != nil {
		return nil, err
	}
	defer lnOut.Close()
	lnCtl, err := net.Listen("unix", c.CtlSock)
	if err != nil {
		return nil, err
	}
	defer lnCtl.Close()
	conR, conW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer conR.Close()
	cmd := exec.Command(qemu, qemuArgs(c)...)
	cmd.Stdout = conW
	v := newVM(cmd, sink, job, probe)
	cmd.Stderr = &limitedBuffer{buf: &v.stderr, max: 4096}
	err = v.startCmd()
	conW.Close()
	if err != nil {
		return nil, err
	}
	defer v.kill()
	done := make(chan struct{})
	defer close(done)
	exitErr := v.supervise(ctx, streams{
		con: readLines(conR, done), out: accept(lnOut, done, readFrame), ctl: accept(lnCtl, done, readEvent),
		// Once qemu is gone, whoever never connected never will.
		onExit: func() { lnOut.Close(); lnCtl.Close() },
	}, job.Timeouts)
	return v.outcome(c.Accel, ir.missing), v.verdict(exitErr)
}

func newVM(cmd *exec.Cmd, sink Sink, job Job, probe bool) *vm {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return &vm{cmd: cmd, sink: sink, d: newDemux(sink, job.Binaries), probe: probe}
}

func (v *vm) startCmd() error {
	v.start = time.Now()
	if err := v.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", v.cmd.Path, err)
	}
	v.exited = make(chan error, 1)
	go func() { v.exited <- v.cmd.Wait() }()
	return nil
}

// streams are what a VM produces: console lines, the output stream and
// the control events; onExit runs when the VM process exited.
type streams struct {
	con    <-chan string
	out    <-chan guest.Frame
	ctl    <-chan guest.Event
	onExit func()
}

// supervise feeds the streams to the demux and the splat scanner until the
// VM exited and its streams ended, and enforces the timeouts. It returns
// the VM process's exit error.
func (v *vm) supervise(ctx context.Context, s streams, t Timeouts) error {
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	// The boot timeout covers the quiet boot; the idle timeout starts
	// with the guest's hello.
	lastAct, lastCon := v.start, v.start
	var panicAt, exitAt time.Time
	var exitErr error
	for s.con != nil || s.out != nil || s.ctl != nil || exitAt.IsZero() {
		select {
		case <-ctx.Done():
			v.stop(fmt.Errorf("run cancelled during %s: %w", v.d.running(), ctx.Err()))
			ctx = context.Background()
		case l, ok := <-s.con:
			if !ok {
				s.con = nil
				continue
			}
			lastAct, lastCon = time.Now(), time.Now()
			v.consoleLine(l)
			if halted(l) {
				v.stop(nil)
			}
			if v.scan.panicked && panicAt.IsZero() {
				panicAt = time.Now()
			}
		case f, ok := <-s.out:
			if !ok {
				s.out = nil
				continue
			}
			lastAct = time.Now()
			v.d.output(f.Bin, f.Data)
		case ev, ok := <-s.ctl:
			if !ok {
				s.ctl = nil
				continue
			}
			lastAct = time.Now()
			v.d.event(ev)
			if v.d.hello && v.held != nil {
				for _, sp := range v.held {
					v.sink.Splat(sp)
				}
				v.held = nil
			}
		case err := <-v.exited:
			exitAt, exitErr = time.Now(), err
			if s.onExit != nil {
				s.onExit()
			}
		case now := <-ticker.C:
			switch {
			case !exitAt.IsZero():
				if now.Sub(exitAt) > drainGrace {
					s.con, s.out, s.ctl = nil, nil, nil
				}
			case !panicAt.IsZero():
				if now.Sub(panicAt) > panicGrace {
					v.stop(nil)
				}
			case !v.d.hello && now.Sub(v.start) > t.Boot:
				v.stop(fmt.Errorf("%w: the guest runner did not start within %v (boot timeout)", ErrCrash, t.Boot))
			case v.d.hello && now.Sub(lastAct) > t.Idle:
				v.stop(fmt.Errorf("%w: no output for %v during %s: a hang, or a silent test (raise --idle-timeout)",
					ErrCrash, t.Idle, v.d.running()))
			case now.Sub(v.start) > t.Overall:
				v.stop(fmt.Errorf("%w: the run exceeded its overall deadline of %v during %s", ErrCrash, t.Overall, v.d.running()))
			}
			if v.scan.Open() && now.Sub(lastCon) > splatQuiet {
				v.emit(v.scan.Flush())
			}
		}
	}
	v.emit(v.scan.Flush())
	return exitErr
}

// outcome summarises the run; missing are the modules with no file.
func (v *vm) outcome(accel string, missing []string) *Outcome {
	out := &Outcome{Total: time.Since(v.start), Accel: accel, Console: v.console, Modules: map[string]string{}}
	if !v.d.started.IsZero() {
		out.BootToFirstTest = v.d.started.Sub(v.start)
	}
	for m, e := range v.d.modules {
		out.Modules[m] = e
	}
	for _, m := range missing {
		out.Modules[m] = "no module file (built in or not in this kernel)"
	}
	return out
}

// verdict is the run's error, from the most to the least telling cause.
func (v *vm) verdict(exitErr error) error {
	err := v.reason
	switch {
	case v.scan.panicked:
		err = fmt.Errorf("%w: kernel panic during %s: %s", ErrCrash, v.d.running(), v.panicLine())
	case err != nil:
	case v.d.guestErr != "":
		err = fmt.Errorf("guest runner failed: %s", v.d.guestErr)
	case !v.d.hello && exitErr != nil && v.stderr.Len() > 0:
		err = fmt.Errorf("qemu failed: %s", firstLine(v.stderr.String()))
	case !v.d.done:
		err = fmt.Errorf("%w: the VM stopped during %s; last console line: %q", ErrCrash, v.d.running(), v.lastLine())
	case v.d.lost() > 0:
		err = fmt.Errorf("%d bytes of test output were lost on the way from the guest", v.d.lost())
	}
	if err != nil && v.probe && !v.d.hello {
		return fmt.Errorf("%w: %w", errNoHello, err)
	}
	if err != nil && !v.d.hello && errors.Is(err, ErrCrash) {
		return fmt.Errorf("%w: %w", ErrNoBoot, err)
	}
	return err
}

// halted tells whether a console line is the kernel's last word on a
// halt: a power-off on a kernel that cannot power off (built without
// ACPI) halts instead (kernel/reboot.c), and qemu never exits. Nothing
// runs after it, so the host ends the VM; a halt before the guest's done
// event is a VM that stopped mid-run.
func halted(line string) bool {
	return strings.Contains(line, "reboot: ") && strings.Contains(line, "System halted")
}

// stop kills qemu; reason, if not nil, becomes the run's error unless one
// was set before.
func (v *vm) stop(reason error) {
	if v.reason == nil {
		v.reason = reason
	}
	v.kill()
}

// kill ends qemu's whole process group.
func (v *vm) kill() {
	if v.cmd.Process != nil {
		syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (v *vm) consoleLine(l string) {
	l = strings.TrimRight(l, "\r\n")
	if len(v.console) == consoleTail {
		v.console = v.console[1:]
	}
	v.console = append(v.console, l)
	v.emit(v.scan.Line(l))
}

func (v *vm) emit(splats []Splat) {
	for _, s := range splats {
		if v.probe && !v.d.hello {
			v.held = append(v.held, s)
			continue
		}
		v.sink.Splat(s)
	}
}

func (v *vm) lastLine() string {
	for i := len(v.console) - 1; i >= 0; i-- {
		if strings.TrimSpace(v.console[i]) != "" {
			return v.console[i]
		}
	}
	return ""
}

func (v *vm) panicLine() string {
	for _, l := range v.console {
		if i := strings.Index(l, "Kernel panic - not syncing"); i >= 0 {
			return l[i:]
		}
	}
	return v.lastLine()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// send passes v on unless done is closed; it tells whether it did.
func send[T any](ch chan<- T, v T, done <-chan struct{}) bool {
	select {
	case ch <- v:
		return true
	case <-done:
		return false
	}
}

// readLines sends r's lines until EOF or done.
func readLines(r io.Reader, done <-chan struct{}) <-chan string {
	ch := make(chan string, 256)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			l, err := br.ReadString('\n')
			if l != "" && !send(ch, l, done) {
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// accept accepts one connection and sends what next decodes from it until
// next fails (EOF, or a broken frame: the verdict then says what went
// missing) or done is closed.
func accept[T any](ln net.Listener, done <-chan struct{}, next func(*bufio.Reader) (T, error)) <-chan T {
	ch := make(chan T, 64)
	go func() {
		defer close(ch)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReaderSize(c, 64<<10)
		for {
			v, err := next(br)
			if err != nil || !send(ch, v, done) {
				return
			}
		}
	}()
	return ch
}

// readFrame reads one output frame.
func readFrame(br *bufio.Reader) (guest.Frame, error) { return guest.ReadFrame(br) }

// readEvent decodes one JSON line of the control port; a line that does
// not decode becomes an error event, so the run says what went wrong.
func readEvent(br *bufio.Reader) (guest.Event, error) {
	line, err := br.ReadBytes('\n')
	if len(line) == 0 {
		return guest.Event{}, err
	}
	var ev guest.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		ev = guest.Event{Ev: guest.EvError, Err: fmt.Sprintf("bad control line %q: %v", line, err)}
	}
	return ev, nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
