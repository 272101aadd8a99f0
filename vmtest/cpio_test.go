package vmtest

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// cpioEntry is one entry read back from a newc archive.
type cpioEntry struct {
	Name       string
	Mode       uint32
	RMaj, RMin uint32
	Data       []byte
}

// readCPIO parses a newc archive up to its trailer, checking the padding
// the kernel's unpacker relies on.
func readCPIO(b []byte) ([]cpioEntry, error) {
	var out []cpioEntry
	off := 0
	field := func(i int) (uint32, error) {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
		return uint32(v), err
	}
	for {
		if off%4 != 0 {
			return nil, fmt.Errorf("entry at %d is not 4-byte aligned", off)
		}
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			return nil, fmt.Errorf("no newc header at %d", off)
		}
		var f [13]uint32
		for i := range f {
			v, err := field(i)
			if err != nil {
				return nil, err
			}
			f[i] = v
		}
		namesz, size := int(f[11]), int(f[6])
		name := string(b[off+110 : off+110+namesz-1])
		if b[off+110+namesz-1] != 0 {
			return nil, fmt.Errorf("name of %q is not NUL-terminated", name)
		}
		off = align4(off + 110 + namesz)
		if name == "TRAILER!!!" {
			return out, nil
		}
		out = append(out, cpioEntry{Name: name, Mode: f[1], RMaj: f[9], RMin: f[10], Data: b[off : off+size]})
		off = align4(off + size)
	}
}

func TestCPIORoundTrip(t *testing.T) {
	var buf bytes.Buffer
	c := &CPIO{w: &buf}
	assert.NilError(t, c.Dir("dev"))
	assert.NilError(t, c.CharDev("dev/console", 5, 1))
	assert.NilError(t, c.Bytes("/a", 0o644, []byte("x")))
	assert.NilError(t, c.Bytes("bb", 0o755, []byte("hello")))
	assert.NilError(t, c.Bytes("empty", 0o644, nil))
	assert.NilError(t, c.Close())

	got, err := readCPIO(buf.Bytes())
	assert.NilError(t, err)
	assert.Assert(t, is.Len(got, 5))
	assert.Check(t, is.Equal(got[0].Mode, uint32(cpioDir|0o755)))
	assert.Check(t, is.Equal(got[1].Mode, uint32(cpioChar|0o600)))
	assert.Check(t, is.Equal(got[1].RMaj, uint32(5)))
	assert.Check(t, is.Equal(got[1].RMin, uint32(1)))
	assert.Check(t, is.Equal(got[2].Name, "a"), "leading slash is dropped")
	assert.Check(t, is.Equal(string(got[2].Data), "x"))
	assert.Check(t, is.Equal(string(got[3].Data), "hello"))
	assert.Check(t, is.Equal(got[3].Mode, uint32(cpioReg|0o755)))
	assert.Check(t, is.Len(got[4].Data, 0))
	assert.Check(t, is.Equal(buf.Len()%4, 0))
}
