package tunwake

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// probes is one of bpf/'s programs on a tap: its objects (bpf2go's),
// their links, and what the kernel missed of them.
type probes struct {
	loaded io.Closer
	links  map[string]link.Link
	losses *instrument.Losses
}

// program is how one of bpf/'s files is loaded and attached.
type program struct {
	file string                               // "bpf/wake.c"
	load func() (*ebpf.CollectionSpec, error) // bpf2go's
	// offsets are the variables set from tun's BTF (setTap).
	offsets map[string][]string
	// needs is what loading needs, for the error of one that failed.
	needs string
}

// attach loads prog into objs for the tap ifindex of the namespace ns (a
// namespace file descriptor) and attaches the probes that list makes of
// the loaded objects.
func (p *probes) attach(prog program, ns, ifindex int, objs io.Closer, list func() []instrument.Probe) error {
	defer profile.Running(profile.Setup).End()
	spec, err := instrument.Spec(prog.file, prog.load)
	if err != nil {
		return err
	}
	if err := setTap(spec, prog.file, ns, ifindex, prog.offsets); err != nil {
		return err
	}
	if err := spec.LoadAndAssign(objs, instrument.LoadOptions()); err != nil {
		return fmt.Errorf("load %s (%s): %w", prog.file, prog.needs, err)
	}
	p.loaded = objs
	ps := list()
	p.links, err = instrument.AttachProbes(ps...)
	if err == nil {
		var progs []*ebpf.Program
		for _, pr := range ps {
			progs = append(progs, pr.Prog)
		}
		p.losses, err = instrument.NewLosses(progs, p.links)
	}
	if err != nil {
		p.Close()
		return err
	}
	return nil
}

// Close detaches and unloads the programs.
func (p *probes) Close() error {
	var errs []error
	for _, l := range p.links {
		errs = append(errs, l.Close())
	}
	if p.loaded != nil {
		errs = append(errs, p.loaded.Close())
	}
	return errors.Join(errs...)
}

// trace attaches a tracer with attach until tb ends; a tracer that cannot
// load is an environment fault.
func trace[T io.Closer](tb testing.TB, attach func() (T, error)) T {
	tb.Helper()
	tr, err := attach()
	if err != nil {
		observe.Fault(tb, instrument.Cause(err), "%v", err)
	}
	tb.Cleanup(func() { tr.Close() })
	return tr
}

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
