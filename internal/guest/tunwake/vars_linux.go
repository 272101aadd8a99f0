package tunwake

import (
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
)

// setTap sets, in spec (the program file named file), the tap's ifindex and
// namespace inode (ns is a namespace file descriptor) and, for each
// variable of offsets, the offset of a member path in tun's types ("struct",
// "member", ...), read from tun's BTF since CO-RE here does not read a
// module's.
func setTap(spec *ebpf.CollectionSpec, file string, ns, ifindex int, offsets map[string][]string) error {
	mod, err := tunTypes()
	if err != nil {
		return err
	}
	ino, err := dropmon.NetnsInode(ns)
	if err != nil {
		return err
	}
	vars := map[string]uint32{"ifindex": uint32(ifindex), "netns": uint32(ino)}
	for name, path := range offsets {
		off, err := instrument.Offset(mod, path[0], path[1:]...)
		if err != nil {
			return err
		}
		vars[name] = uint32(off)
	}
	for name, v := range vars {
		if err := spec.Variables[name].Set(v); err != nil {
			return fmt.Errorf("set %s of %s: %w", name, file, err)
		}
	}
	return nil
}
