package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/xmitcheck/xmitcheck/kernels"
)

func cmdKernels(args []string) error {
	if len(args) == 0 {
		return listKernels()
	}
	switch args[0] {
	case "fetch":
		if len(args) == 1 {
			return usagef("kernels fetch: name at least one kernel (xmitcheck kernels lists them)")
		}
		for _, name := range args[1:] {
			k, err := kernels.Resolve(context.Background(), name, kernels.Options{Progress: progress(), Refresh: true})
			if err != nil {
				return err
			}
			fmt.Printf("%s\t%s %s\t%s\n", k.Name, k.Package, k.PackageVersion, k.Vmlinuz)
		}
		return nil
	case "config":
		_, err := os.Stdout.WriteString(kernels.Config)
		return err
	case "build":
		_, err := cmdBuild(args[1:])
		return err
	case "source":
		if len(args) != 3 {
			return usagef("kernels source NAME DIR: e.g. kernels source debian:7.3 ~/src")
		}
		tree, err := kernels.Source(context.Background(), args[1], args[2], kernels.Options{Progress: os.Stderr})
		if err != nil {
			return err
		}
		fmt.Println(tree)
		return nil
	}
	return usagef("kernels %q: use `kernels`, `kernels fetch NAME...`, `kernels source NAME DIR`, `kernels build --tree DIR` or `kernels config`", args[0])
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
