package results

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// Converter turns one test binary's raw -test.v=test2json output into
// `go test -json` events: it pipes the output through `go tool test2json`
// (cmd/test2json, so the framing is read exactly as go test reads it) and
// hands each event on as it comes.
type Converter struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	done    chan struct{}
	verdict string // the package-level "pass" or "fail", once seen
}

// StartConverter starts converting the output of the test binary of package
// pkg. emit gets every event, one at a time, from a goroutine of its own.
func StartConverter(pkg string, emit func(Event)) (*Converter, error) {
	return StartConverterWith("", pkg, emit)
}

// StartConverterWith is StartConverter through the test2json program at
// path (cmd/test2json built on its own, as an installed kselftest
// collection carries it, where there is no go command); "" is `go tool
// test2json`.
func StartConverterWith(path, pkg string, emit func(Event)) (*Converter, error) {
	argv := []string{"go", "tool", "test2json"}
	if path != "" {
		argv = []string{path}
	}
	cmd := exec.Command(argv[0], append(argv[1:], "-t", "-p", pkg)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		if path != "" {
			return nil, fmt.Errorf("%s: %w (the collection's test2json: install the collection again)", path, err)
		}
		return nil, fmt.Errorf("go tool test2json: %w (xmitcheck needs the go command to build and read tests)", err)
	}
	c := &Converter{cmd: cmd, in: in, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var e Event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			if e.Test == "" && (e.Action == "pass" || e.Action == "fail") {
				c.verdict = e.Action
			}
			emit(e)
		}
	}()
	return c, nil
}

// Write feeds the converter what the binary printed, in pieces of any size.
func (c *Converter) Write(p []byte) (int, error) { return c.in.Write(p) }

// End ends the input, waits for the last event and returns the package's
// own verdict, "pass" or "fail", or "" when the binary never gave one.
func (c *Converter) End() (verdict string) {
	c.in.Close()
	<-c.done
	c.cmd.Wait()
	return c.verdict
}
