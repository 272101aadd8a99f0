package guest

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// drainAfterExit bounds how long output is still read after a binary
// exited, for children it left behind that hold its stdout open.
const drainAfterExit = 2 * time.Second

// runBinary runs binary i in its own scratch directory and process group,
// streams its stdout and stderr and reports its exit code. It returns an
// error only when the host can no longer be reached.
func runBinary(i int, b Binary, env []string, snd sender) error {
	if err := snd.Event(Event{Ev: EvStart, Bin: i}); err != nil {
		return err
	}
	code, n, err := execBinary(i, b, env, snd)
	if err != nil {
		return err
	}
	return snd.Event(Event{Ev: EvExit, Bin: i, Code: code, Off: n})
}

// execBinary runs binary i and returns its exit code and the number of
// output bytes it sent.
func execBinary(i int, b Binary, env []string, snd sender) (code int, sent int64, err error) {
	dir, err := os.MkdirTemp("", "xmitcheck-run-")
	if err == nil {
		defer os.RemoveAll(dir)
	} else {
		dir = "/"
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, 0, fmt.Errorf("pipe for %s: %w", b.Name, err)
	}
	defer r.Close()
	cmd := exec.Command(b.Path, b.Args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if os.Getenv("PATH") == "" {
		// The kernel starts init with HOME and TERM only.
		cmd.Env = append(cmd.Env, "PATH=/usr/sbin:/usr/bin:/sbin:/bin")
	}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The binary's window in the kernel log: a report after its exit mark
	// is still its own until the next binary starts.
	feature.Mark(feature.BinaryStart, b.Name)
	defer feature.Mark(feature.BinaryExit, b.Name)
	err = cmd.Start()
	w.Close()
	if err != nil {
		// A binary missing or unreadable is the harness's, not the
		// kernel's: the record says so to the judge.
		why := fmt.Sprintf("cannot start the test binary %s: %v", b.Path, err)
		msg := "xmitcheck guest: " + why + "\n" + feature.Record{Fault: feature.Harness, Why: why}.String() + "\n"
		return 127, int64(len(msg)), snd.Output(i, []byte(msg))
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		// Whatever the binary left behind dies with it, and its output
		// is read for a bounded time only.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		r.SetReadDeadline(time.Now().Add(drainAfterExit))
		close(exited)
	}()
	buf := make([]byte, 64<<10)
	var sendErr error
	for {
		n, err := r.Read(buf)
		if n > 0 && sendErr == nil {
			sendErr = snd.Output(i, buf[:n])
			sent += int64(n)
		}
		if err != nil {
			break
		}
	}
	<-exited
	// Inside the binary's window: a leak it left is its own.
	scanLeaks(time.Now())
	if sendErr != nil {
		return 0, 0, fmt.Errorf("send output of %s: %w", b.Name, sendErr)
	}
	return exitCode(cmd.ProcessState), sent, nil
}

// exitCode is the shell's view of a status: the code, or 128+signal.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
