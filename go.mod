module github.com/xmitcheck/xmitcheck

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0
	github.com/klauspost/compress v1.20.4
	github.com/ulikunitz/xz v0.5.17
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
	golang.org/x/sys v0.50.0
	gotest.tools/v3 v3.5.2
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/safehtml v0.0.2 // indirect
	golang.org/x/text v0.42.0 // indirect
)

tool github.com/cilium/ebpf/cmd/bpf2go
