package devmap

// The programs in bpf/devmap.c are compiled with cilium/ebpf's bpf2go; the
// generated bpf_bpfel.go and bpf_bpfel.o are committed so that building needs
// no clang. Regenerating needs clang ≥ 14 and llvm-strip (Debian's clang and
// llvm packages) and libbpf's headers (libbpf-dev) and <linux/bpf.h>
// (linux-libc-dev). bpf2go itself passes clang -O2 and -g.
//
//go:generate go tool bpf2go -tags linux -target bpfel bpf bpf/devmap.c -- -I/usr/include/x86_64-linux-gnu -Wall -Werror
