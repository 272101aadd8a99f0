package tunwake

// The programs in bpf/ are compiled with cilium/ebpf's bpf2go; the
// generated *_bpfel.go and *_bpfel.o are committed so that building
// needs no clang. Regenerating needs what suites/qdisc/gen.go says, which
// also says why __TARGET_ARCH_x86.
//
//go:generate go tool bpf2go -tags linux -target bpfel wake bpf/wake.c -- -I/usr/include/x86_64-linux-gnu -D__TARGET_ARCH_x86 -Wall -Werror
//go:generate go tool bpf2go -tags linux -target bpfel owner bpf/owner.c -- -I/usr/include/x86_64-linux-gnu -D__TARGET_ARCH_x86 -Wall -Werror
