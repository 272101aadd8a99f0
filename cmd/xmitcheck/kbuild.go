package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/kernels/kbuild"
)

// buildFlags are the flags of `kernels build`, which bisect shares.
type buildFlags struct {
	tree          string
	revert, apply listFlag
	config        listFlag
	name          string
	jobs          int
	base          string
	debug         listFlag
}

func (b *buildFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.tree, "tree", "", "kernel source tree, a git checkout or a plain one (never written to)")
	fs.Var(&b.revert, "revert", "patch file, or commit of a git tree, to revert on a copy of the tree (repeatable)")
	fs.Var(&b.apply, "apply", "patch file to apply on a copy of the tree (repeatable)")
	fs.Var(&b.config, "config", "extra config fragment merged after the suites' own (repeatable)")
	fs.StringVar(&b.name, "name", "", "the build's name, run as --kernel build:NAME (default: tree, commit, patches)")
	fs.IntVar(&b.jobs, "j", 0, "make jobs (default: one per CPU)")
	fs.StringVar(&b.base, "base", kbuild.BaseMinimal,
		"config base: minimal (allnoconfig given kernels/base.config) or defconfig (+ kvm_guest.config)")
	fs.Var(&b.debug, "debug", "debug flavours, comma-separated or repeated: "+strings.Join(kbuild.DebugFlavours, ", ")+
		" (kcsan not with kasan); the build's name ends with them, e.g. NAME+kcsan")
}

// check reports a bad flag value as a usage error.
func (b *buildFlags) check() error {
	if _, err := kbuild.ParseDebug(b.debug); err != nil {
		return usagef("--debug: %v", err)
	}
	return nil
}

func (b *buildFlags) options() kbuild.BuildOptions {
	return kbuild.BuildOptions{
		Options: kernels.Options{Progress: os.Stderr},
		Tree:    b.tree, Revert: b.revert, Apply: b.apply, Config: b.config, Name: b.name, Jobs: b.jobs,
		Base: b.base, Debug: b.debug,
	}
}

// cmdBuild is `xmitcheck kernels build`: build a tree into the build cache
// and print the name to run it by.
func cmdBuild(args []string) (*kernels.Built, error) {
	fs := newFlags("kernels build", "--tree DIR [flags]",
		"Build a kernel tree, with patches reverted or applied on a copy, into the build cache:\n"+
			"--kernel build:NAME runs it.")
	var b buildFlags
	b.register(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if b.tree == "" || fs.NArg() > 0 {
		return nil, usagef("kernels build: give --tree DIR (and no other arguments)")
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	built, err := kbuild.Build(ctx, b.options())
	if err != nil {
		return nil, err
	}
	how := fmt.Sprintf("built in %v", built.Took)
	if built.Cached {
		how = "cached"
	}
	fmt.Printf("build:%s\t%s\t%s\t%s\n", built.Name, built.Release, how, built.Image())
	return built, nil
}
