package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels"
)

const kernelsAbout = `Kernels to run the suites on:
  xmitcheck kernels                     list the catalog and what is cached
  xmitcheck kernels fetch NAME...       fetch catalog kernels into the cache
  xmitcheck kernels source NAME DIR     fetch and unpack Debian's linux-source of a catalog kernel
  xmitcheck kernels build --tree DIR    build a kernel tree into build:NAME
  xmitcheck kernels config              print the config fragment the suites need`

func cmdKernels(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		if err := usageOnly("kernels", "[fetch|source|build|config] ...", kernelsAbout, args); err != nil {
			return err
		}
		return listKernels()
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "fetch":
		fs := newFlags("kernels fetch", "NAME...", "Fetch catalog kernels (the newest package of each) into the cache.")
		if err := parse(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			return usagef("kernels fetch: name at least one kernel (xmitcheck kernels lists them)")
		}
		for _, name := range fs.Args() {
			k, err := kernels.Resolve(context.Background(), name, kernels.Options{Progress: runner.Progress(), Refresh: true})
			if err != nil {
				return err
			}
			fmt.Printf("%s\t%s %s\t%s\n", k.Name, k.Package, k.PackageVersion, k.Vmlinuz)
		}
		return nil
	case "config":
		about := "Print the kernel config fragment the suites need (kernels/config)."
		if err := usageOnly("kernels config", "", about, rest); err != nil {
			return err
		}
		_, err := os.Stdout.WriteString(kernels.Config)
		return err
	case "build":
		_, err := cmdBuild(rest)
		return err
	case "source":
		fs := newFlags("kernels source", "NAME DIR", "Fetch Debian's linux-source of a catalog kernel and unpack it in DIR.")
		if err := parse(fs, rest); err != nil {
			return err
		}
		if fs.NArg() != 2 {
			return usagef("kernels source NAME DIR: e.g. kernels source debian:7.3 ~/src")
		}
		tree, err := kernels.Source(context.Background(), fs.Arg(0), fs.Arg(1), kernels.Options{Progress: os.Stderr})
		if err != nil {
			return err
		}
		fmt.Println(tree)
		return nil
	}
	return usagef("kernels: unknown command %q: use fetch, source, build or config (xmitcheck kernels -h)", sub)
}

func listKernels() error {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSUITE\tCACHED\tDESCRIPTION")
	for _, e := range kernels.Catalog() {
		cached := "-"
		if k, ok := kernels.Cached(e.Name, kernels.Options{}); ok {
			cached = k.PackageVersion
			if cached == "" {
				cached = k.Release
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.Name, e.Suite, cached, e.Description)
	}
	return w.Flush()
}
