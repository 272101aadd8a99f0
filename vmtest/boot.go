package vmtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
}

// boot runs one qemu and returns when it has exited and its streams ended.
func boot(ctx context.Context, qemu string, c qemuConfig, job Job, ir *initramfs, sink Sink, probe bool) (*Outcome, error) {
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
	v := &vm{sink: sink, d: newDemux(sink, job.Binaries), probe: probe}
	v.cmd = exec.Command(qemu, qemuArgs(c)...)
	v.cmd.Stdout = conW
	v.cmd.Stderr = &limitedBuffer{buf: &v.stderr, max: 4096}
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	v.start = time.Now()
	err = v.cmd.Start()
	conW.Close()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", qemu, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- v.cmd.Wait() }()
	defer v.kill()

	conCh := readLines(conR)
	outCh := acceptChunks(lnOut)
	ctlCh := acceptEvents(lnCtl)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()

	t := job.Timeouts
	lastAct, lastCon := v.start, v.start
	var panicAt, exitAt time.Time
	var exitErr error
	for conCh != nil || outCh != nil || ctlCh != nil || exitAt.IsZero() {
		select {
		case <-ctx.Done():
			v.stop(fmt.Errorf("run cancelled while running %s: %w", v.d.running(), ctx.Err()))
			ctx = context.Background()
		case l, ok := <-conCh:
			if !ok {
				conCh = nil
				continue
			}
			lastAct, lastCon = time.Now(), time.Now()
			v.consoleLine(l)
			if v.scan.panicked && panicAt.IsZero() {
				panicAt = time.Now()
			}
		case p, ok := <-outCh:
			if !ok {
				outCh = nil
				continue
			}
			lastAct = time.Now()
			v.d.output(p)
		case ev, ok := <-ctlCh:
			if !ok {
				ctlCh = nil
				continue
			}
			lastAct = time.Now()
			v.d.event(ev)
			if v.d.hello && v.held != nil {
				for _, s := range v.held {
					v.sink.Splat(s)
				}
				v.held = nil
			}
		case err := <-exited:
			exitAt, exitErr = time.Now(), err
			// qemu is gone: whoever never connected never will.
			lnOut.Close()
			lnCtl.Close()
		case now := <-ticker.C:
			switch {
			case !exitAt.IsZero():
				if now.Sub(exitAt) > drainGrace {
					conCh, outCh, ctlCh = nil, nil, nil
				}
			case !panicAt.IsZero():
				if now.Sub(panicAt) > panicGrace {
					v.stop(nil)
				}
			case !v.d.hello && now.Sub(v.start) > t.Boot:
				v.stop(fmt.Errorf("%w: the guest runner did not start within %v (boot timeout)", ErrCrash, t.Boot))
			case now.Sub(lastAct) > t.Idle:
				v.stop(fmt.Errorf("%w: no output for %v while running %s (idle timeout)", ErrCrash, t.Idle, v.d.running()))
			case now.Sub(v.start) > t.Overall:
				v.stop(fmt.Errorf("%w: the run exceeded its overall deadline of %v while running %s", ErrCrash, t.Overall, v.d.running()))
			}
			if v.scan.Open() && now.Sub(lastCon) > splatQuiet {
				v.emit(v.scan.Flush())
			}
		}
	}
	v.emit(v.scan.Flush())
	out := &Outcome{Total: time.Since(v.start), Accel: c.Accel, Console: v.console, Modules: map[string]string{}}
	if !v.d.started.IsZero() {
		out.BootToFirstTest = v.d.started.Sub(v.start)
	}
	for m, e := range v.d.modules {
		out.Modules[m] = e
	}
	for _, m := range ir.missing {
		out.Modules[m] = "no module file (built in or not in this kernel)"
	}
	return out, v.verdict(exitErr)
}

// verdict is the run's error, from the most to the least telling cause.
func (v *vm) verdict(exitErr error) error {
	err := v.reason
	switch {
	case v.scan.panicked:
		err = fmt.Errorf("%w: kernel panic while running %s: %s", ErrCrash, v.d.running(), v.panicLine())
	case err != nil:
	case v.d.guestErr != "":
		err = fmt.Errorf("guest runner failed: %s", v.d.guestErr)
	case !v.d.hello && exitErr != nil && v.stderr.Len() > 0:
		err = fmt.Errorf("qemu failed: %s", firstLine(v.stderr.String()))
	case !v.d.done:
		err = fmt.Errorf("%w: the VM stopped while running %s; last console line: %q", ErrCrash, v.d.running(), v.lastLine())
	case v.d.lost() > 0:
		err = fmt.Errorf("%d bytes of test output were lost on the way from the guest", v.d.lost())
	}
	if err != nil && v.probe && !v.d.hello {
		return fmt.Errorf("%w: %w", errNoHello, err)
	}
	return err
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

// readLines sends r's lines until EOF.
func readLines(r *os.File) <-chan string {
	ch := make(chan string, 256)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			l, err := br.ReadString('\n')
			if l != "" {
				ch <- l
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// acceptChunks accepts one connection and sends what it reads until EOF.
func acceptChunks(ln net.Listener) <-chan []byte {
	ch := make(chan []byte, 64)
	go func() {
		defer close(ch)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for {
			buf := make([]byte, 64<<10)
			n, err := c.Read(buf)
			if n > 0 {
				ch <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// acceptEvents accepts one connection and sends the events it reads.
func acceptEvents(ln net.Listener) <-chan guest.Event {
	ch := make(chan guest.Event, 64)
	go func() {
		defer close(ch)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		sc := bufio.NewScanner(c)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var ev guest.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				ev = guest.Event{Ev: guest.EvError, Err: fmt.Sprintf("bad control line %q: %v", sc.Text(), err)}
			}
			ch <- ev
		}
	}()
	return ch
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
