package kernels

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Vmlinux decompresses the payload of a bzImage: the kernel's ELF image. The x86 boot
// protocol (Documentation/arch/x86/boot.rst, 2.08+) gives its place:
//
//	0x1f1 setup_sects (u8), 0x202 header "HdrS",
//	0x248 payload_offset (u32, from the protected-mode code),
//	0x24c payload_length (u32)
func Vmlinux(b []byte) ([]byte, error) {
	if len(b) < 0x250 || string(b[0x202:0x206]) != "HdrS" {
		return nil, errors.New("not a bzImage")
	}
	setup := int(b[0x1f1])
	if setup == 0 {
		setup = 4
	}
	start := (setup+1)*512 + int(binary.LittleEndian.Uint32(b[0x248:]))
	end := start + int(binary.LittleEndian.Uint32(b[0x24c:]))
	if start+8 >= end || end > len(b) {
		return nil, errors.New("bzImage payload out of bounds")
	}
	p := b[start:end]
	// zstd and xz payloads end with the uncompressed size (size_append
	// in arch/x86/boot/compressed/Makefile), which their decoders take for
	// a truncated next frame.
	trimmed := p[:len(p)-4]
	switch {
	case bytes.HasPrefix(p, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		d, err := zstd.NewReader(bytes.NewReader(trimmed), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return io.ReadAll(d)
	case bytes.HasPrefix(p, []byte{0x1f, 0x8b}):
		r, err := gzip.NewReader(bytes.NewReader(p))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	case bytes.HasPrefix(p, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		// The kernel's xz streams use the x86 BCJ filter, which the Go
		// xz package lacks; xz-utils has it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "xz", "-dc")
		cmd.Stdin = bytes.NewReader(trimmed)
		return cmd.Output()
	}
	return nil, fmt.Errorf("unknown bzImage compression % x", p[:min(len(p), 4)])
}

// takesModules reports whether the kernel in the bzImage at path can load
// modules: its ELF image has the table of symbols exported to them
// (__ksymtab), which only CONFIG_MODULES builds.
func takesModules(path string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	vmlinux, err := Vmlinux(data)
	if err != nil {
		return false, err
	}
	f, err := elf.NewFile(bytes.NewReader(vmlinux))
	if err != nil {
		return false, fmt.Errorf("the kernel in %s: %w", path, err)
	}
	return f.Section("__ksymtab") != nil, nil
}
