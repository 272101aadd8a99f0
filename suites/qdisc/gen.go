package qdisc

// The programs in bpf/fastpath.c and bpf/batch.c are compiled with
// cilium/ebpf's bpf2go; the generated *_bpfel.go and *_bpfel.o are
// committed so that building needs no clang. Regenerating needs clang ≥ 14 and llvm-strip
// (Debian's clang and llvm packages), libbpf's headers (libbpf-dev) and
// <linux/bpf.h> (linux-libc-dev). bpf2go itself passes clang -O2 and -g;
// __TARGET_ARCH_x86 makes the kprobes read x86's pt_regs (the suites run
// on amd64 kernels).
//
//go:generate go tool bpf2go -tags linux -target bpfel fastpath bpf/fastpath.c -- -I/usr/include/x86_64-linux-gnu -D__TARGET_ARCH_x86 -Wall -Werror
//go:generate go tool bpf2go -tags linux -target bpfel batch bpf/batch.c -- -I/usr/include/x86_64-linux-gnu -D__TARGET_ARCH_x86 -Wall -Werror
