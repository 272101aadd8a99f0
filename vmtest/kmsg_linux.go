package vmtest

import (
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/splat"
	"golang.org/x/sys/unix"
)

// kmsgWatcher reads the kernel log records written after it started and
// reports the splats among them on C. Without /dev/kmsg (a container) it
// reports nothing.
type kmsgWatcher struct {
	C    chan Splat
	f    *os.File
	done chan struct{}

	mu   sync.Mutex
	scan splatScanner
	tail []string
}

func watchKmsg() *kmsgWatcher {
	w := &kmsgWatcher{C: make(chan Splat, 16), done: make(chan struct{})}
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		close(w.done)
		return w
	}
	// SEEK_END on /dev/kmsg skips the records already in the buffer.
	unix.Seek(fd, 0, io.SeekEnd)
	w.f = os.NewFile(uintptr(fd), "/dev/kmsg")
	go w.read()
	return w
}

func (w *kmsgWatcher) read() {
	defer close(w.done)
	buf := make([]byte, 8192)
	for {
		w.f.SetReadDeadline(time.Now().Add(splatQuiet))
		n, err := w.f.Read(buf)
		w.mu.Lock()
		var splats []Splat
		if _, l, ok := splat.KmsgRecord(string(buf[:max(n, 0)])); ok {
			if len(w.tail) == consoleTail {
				w.tail = w.tail[1:]
			}
			w.tail = append(w.tail, l)
			splats = append(splats, w.scan.Line(l)...)
		} else if os.IsTimeout(err) {
			splats = w.scan.Flush()
		}
		w.mu.Unlock()
		for _, s := range splats {
			w.C <- s
		}
		// EPIPE means records were overwritten; reading goes on.
		if err != nil && !os.IsTimeout(err) && !strings.Contains(err.Error(), "broken pipe") {
			return
		}
	}
}

// Close stops reading.
func (w *kmsgWatcher) Close() {
	if w.f != nil {
		w.f.Close()
	}
}

// Drain stops reading and returns the splats not yet taken from C.
func (w *kmsgWatcher) Drain() []Splat {
	w.Close()
	var out []Splat
	for {
		select {
		case s := <-w.C:
			out = append(out, s)
		case <-w.done:
			for {
				select {
				case s := <-w.C:
					out = append(out, s)
				default:
					w.mu.Lock()
					out = append(out, w.scan.Flush()...)
					w.mu.Unlock()
					return out
				}
			}
		}
	}
}

// Tail returns the last kernel log lines.
func (w *kmsgWatcher) Tail() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.tail...)
}
