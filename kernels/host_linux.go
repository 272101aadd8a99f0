package kernels

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// hostKernel is the running kernel: tests run on it directly, no files needed.
func hostKernel() (*Kernel, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nil, fmt.Errorf("uname: %w", err)
	}
	return &Kernel{Name: "host", Host: true, Release: unix.ByteSliceToString(u.Release[:])}, nil
}
