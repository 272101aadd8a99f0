package vmtest

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/xmitcheck/xmitcheck/kernels"
)

// bootImage returns the image qemu boots fastest: the uncompressed vmlinux
// inside a bzImage when it has a PVH entry point, else the bzImage itself.
//
// With an ELF that carries XEN_ELFNOTE_PHYS32_ENTRY, qemu -kernel enters
// the kernel directly: no real-mode setup in the firmware and no
// decompression in the guest, which under TCG saves 2–3 s of every boot.
// The vmlinux is cached by the bzImage's content.
func bootImage(vmlinuz, cacheDir string) string {
	if cacheDir == "" {
		return vmlinuz
	}
	data, err := os.ReadFile(vmlinuz)
	if err != nil {
		return vmlinuz
	}
	sum := sha256.Sum256(data)
	cached := filepath.Join(cacheDir, "vmlinux-"+hex.EncodeToString(sum[:12]))
	if _, err := os.Stat(cached); err == nil {
		return cached
	}
	if _, err := os.Stat(cached + ".none"); err == nil {
		return vmlinuz
	}
	elfData, err := kernels.Vmlinux(data)
	if err == nil && !hasPVHEntry(elfData) {
		err = errors.New("no PVH entry point")
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return vmlinuz
	}
	if err != nil {
		// Remember the miss: the next run boots the bzImage at once.
		os.WriteFile(cached+".none", []byte(err.Error()+"\n"), 0o644)
		return vmlinuz
	}
	// A temporary file of its own: two VMs of one kernel (run --vms) may
	// extract it at the same time.
	if err := writeRename(cached, elfData); err != nil {
		return vmlinuz
	}
	return cached
}

// hasPVHEntry tells whether an ELF kernel has a Xen PVH entry note.
func hasPVHEntry(b []byte) bool {
	const xenElfnotePhys32Entry = 18
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return false
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		notes, err := io.ReadAll(p.Open())
		if err != nil {
			return false
		}
		for len(notes) >= 12 {
			namesz := int(binary.LittleEndian.Uint32(notes[0:]))
			descsz := int(binary.LittleEndian.Uint32(notes[4:]))
			typ := binary.LittleEndian.Uint32(notes[8:])
			name := notes[12:min(len(notes), 12+namesz)]
			if bytes.Equal(name, []byte("Xen\x00")) && typ == xenElfnotePhys32Entry {
				return true
			}
			next := 12 + align4(namesz) + align4(descsz)
			if next > len(notes) {
				break
			}
			notes = notes[next:]
		}
	}
	return false
}

func align4(n int) int { return (n + 3) &^ 3 }

// writeRename writes data to a temporary file beside path and renames it
// over path, so that a reader never sees a half-written file.
func writeRename(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
