module github.com/xmitcheck/xmitcheck

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/ulikunitz/xz v0.5.17 // indirect
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	golang.org/x/sys v0.50.0 // indirect
	gotest.tools/v3 v3.5.2 // indirect
)

tool github.com/cilium/ebpf/cmd/bpf2go
