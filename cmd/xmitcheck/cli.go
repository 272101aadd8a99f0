package main

import (
	"fmt"
	"os"
)

func run(args []string) int {
	fmt.Fprintln(os.Stderr, "xmitcheck: usage: xmitcheck run|exec|kernels|bench ...")
	return 2
}
