package vmtest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// NewCPIO returns a writer of the "newc" cpio format onto w; Close writes
// the trailer. The native backend's initramfs and the LAVA job's ramdisk
// are written with it.
func NewCPIO(w io.Writer) *CPIO { return &CPIO{w: w} }

// CPIO writes the "newc" cpio format the kernel unpacks into the
// initramfs (Documentation/driver-api/early-userspace/buffer-format.rst):
//
//	c_magic "070701", then 13 fields of 8 hex digits: c_ino c_mode c_uid
//	c_gid c_nlink c_mtime c_filesize c_maj c_min c_rmaj c_rmin c_namesize
//	c_chksum; the name with its NUL, padded to 4; the data, padded to 4.
type CPIO struct {
	w   io.Writer
	ino uint32
	// dirs are the directories the archive has.
	dirs map[string]bool
}

// File modes of the entries (S_IFMT bits).
const (
	cpioDir  = 0o040000
	cpioReg  = 0o100000
	cpioChar = 0o020000
)

func (c *CPIO) header(name string, mode, size, rmaj, rmin uint32) error {
	name = strings.TrimPrefix(name, "/")
	c.ino++
	nlink := uint32(1)
	if mode&0o170000 == cpioDir {
		nlink = 2
	}
	h := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, size, 0, 0, rmaj, rmin, len(name)+1, 0)
	if _, err := io.WriteString(c.w, h+name+"\x00"); err != nil {
		return err
	}
	return c.pad(len(h) + len(name) + 1)
}

func (c *CPIO) pad(n int) error {
	if r := n % 4; r != 0 {
		_, err := c.w.Write(make([]byte, 4-r))
		return err
	}
	return nil
}

// Dir adds a directory.
func (c *CPIO) Dir(name string) error {
	if c.dirs == nil {
		c.dirs = map[string]bool{}
	}
	c.dirs[name] = true
	return c.header(name, cpioDir|0o755, 0, 0, 0)
}

// CharDev adds a character device node.
func (c *CPIO) CharDev(name string, major, minor uint32) error {
	return c.header(name, cpioChar|0o600, 0, major, minor)
}

// Bytes adds a regular file holding data.
func (c *CPIO) Bytes(name string, perm uint32, data []byte) error {
	if err := c.header(name, cpioReg|perm, uint32(len(data)), 0, 0); err != nil {
		return err
	}
	if _, err := c.w.Write(data); err != nil {
		return err
	}
	return c.pad(len(data))
}

// Copy adds a regular file with the contents of the host file src.
func (c *CPIO) Copy(name string, perm uint32, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() >= 1<<32 {
		return fmt.Errorf("%s is too large for cpio (%d bytes)", src, st.Size())
	}
	if err := c.header(name, cpioReg|perm, uint32(st.Size()), 0, 0); err != nil {
		return err
	}
	n, err := io.Copy(c.w, f)
	if err != nil {
		return err
	}
	if n != st.Size() {
		return fmt.Errorf("%s changed while it was copied", src)
	}
	return c.pad(int(n))
}

// CopyAt adds the host file at the same absolute path in the archive,
// after the directories above it that the archive lacks.
func (c *CPIO) CopyAt(path string, perm uint32) error {
	name := strings.TrimPrefix(filepath.Clean(path), "/")
	var missing []string
	for d := filepath.Dir(name); d != "." && !c.dirs[d]; d = filepath.Dir(d) {
		missing = append(missing, d)
	}
	for _, d := range slices.Backward(missing) {
		if err := c.Dir(d); err != nil {
			return err
		}
	}
	return c.Copy(name, perm, path)
}

// Close writes the trailer entry.
func (c *CPIO) Close() error {
	return c.header("TRAILER!!!", 0, 0, 0, 0)
}
