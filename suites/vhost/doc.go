// Package vhost checks the vhost-net consumer side of tun backpressure
// (seed 000, "tun/tap & vhost-net: avoid ptr_ring tail-drop when a qdisc is
// present", Linux 7.3) with a userspace vhost-net guest (internal/vhost)
// attached to a tap, so no second VM is needed.
package vhost
