// Package tiny is the test binary vmtest's integration tests run in a
// guest. Each test but TestGuest only acts when XMITCHECK_TINY names it, so
// the binary is harmless when run by accident.
package tiny

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
)

func only(t *testing.T, name string) {
	if os.Getenv("XMITCHECK_TINY") != name {
		t.Skipf("XMITCHECK_TINY is not %q", name)
	}
}

// TestGuest checks what the guest init promises: pseudo filesystems, lo up,
// a scratch working directory, the job's environment.
func TestGuest(t *testing.T) {
	for _, p := range []string{"/proc/self/stat", "/sys/class/net/lo", "/sys/fs/bpf", "/sys/kernel/tracing"} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%v", err)
		}
	}
	ifc, err := net.InterfaceByName("lo")
	if err != nil || ifc.Flags&net.FlagUp == 0 {
		t.Errorf("lo is not up: %v %v", ifc, err)
	}
	if wd, _ := os.Getwd(); wd == "/" {
		t.Errorf("working directory is /, want a scratch directory")
	}
	fmt.Println("hello from the guest, XMITCHECK_TINY=" + os.Getenv("XMITCHECK_TINY"))
}

// TestExit3 exits with code 3 after printing a line without a newline.
func TestExit3(t *testing.T) {
	only(t, "exit3")
	fmt.Print("no newline before exit")
	os.Exit(3)
}

// TestHang prints one line and blocks forever.
func TestHang(t *testing.T) {
	only(t, "hang")
	fmt.Println("about to hang")
	time.Sleep(time.Hour)
}

// TestMillion prints a million numbered lines as fast as it can.
func TestMillion(t *testing.T) {
	only(t, "million")
	w := bufio.NewWriter(os.Stdout)
	for i := range 1000000 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	w.Flush()
}

// TestPanic crashes the kernel through sysrq, after its line has reached
// the host. The guest init reads the binary's output pipe and forwards each
// read before it reads again, so once a second line has left the pipe, the
// first has been forwarded; a crash right after the first line can overtake
// it (a CI run under single-threaded TCG got none of it).
func TestPanic(t *testing.T) {
	only(t, "panic")
	fmt.Println("crashing the kernel")
	drained(t)
	fmt.Println("(forwarded)")
	drained(t)
	if err := os.WriteFile("/proc/sysrq-trigger", []byte("c"), 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Hour)
}

// drained waits until the guest init has read everything written to
// stdout, a pipe, at most 10 s.
func drained(t *testing.T) {
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		n, err := unix.IoctlGetInt(1, unix.TIOCINQ) // FIONREAD
		if err != nil {
			t.Fatalf("FIONREAD on stdout: %v", err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d bytes of output still unread after 10s", n)
		}
	}
}

// TestAssert fails a gotest.tools assertion, whose message quotes the
// expression it reads from this file: the guest must have the source.
func TestAssert(t *testing.T) {
	only(t, "assert")
	answer := 41
	assert.Check(t, answer == 42)
}
