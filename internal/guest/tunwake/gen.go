package tunwake

// The program in bpf/wake.c is compiled with cilium/ebpf's bpf2go; the
// generated wake_bpfel.go and wake_bpfel.o are committed so that building
// needs no clang. Regenerating needs what suites/qdisc/gen.go says.
//
//go:generate go tool bpf2go -tags linux -target bpfel wake bpf/wake.c -- -I/usr/include/x86_64-linux-gnu -Wall -Werror
