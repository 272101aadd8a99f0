// Package vhost checks the vhost-net consumer side of tun backpressure
// (seed 000, "tun/tap & vhost-net: avoid ptr_ring tail-drop when a qdisc is
// present", Linux 7.3) with a userspace vhost-net guest (internal/vhost)
// attached to a tap, so no second VM is needed.
//
// With IFF_BACKPRESSURE a tap stops its queue when its ptr_ring is full
// instead of tail-dropping, and vhost-net, which moves up to 64 entries at a
// time out of that ring into its own buffer (vhost_net_buf_produce), must
// wake it (tun_wake_queue, once it consumed half the ring or emptied it).
// The risks are lost frames and a queue nobody wakes: every test here ends
// with an exact ledger (sent = received + tun drops + qdisc drops + backlog),
// and fails if the kernel logged a splat or gained a WARN/BUG/lockup taint
// while it ran (internal/kmsg).
//
// Tests (one behaviour each; the guest is the test, posting buffers at a rate
// it controls):
//   - TestDelivery: frames arrive in the guest's buffers intact and in order
//     behind a zero 12-byte virtio-net header (flag off and on), also with a
//     guest using event indexes, indirect descriptors and mergeable 40-byte
//     buffers at once (num_buffers 2, every frame put together again).
//   - TestTransmit: the other direction of the same device (handle_tx):
//     frames the guest transmits arrive on the tap intact and in order.
//   - TestStock/NoGuestBuffers: without the flag and without guest buffers,
//     vhost holds one batch (≤ 64), the ring fills, tun drops the rest; the
//     same with each guest variant (VIRTIO_RING_F_EVENT_IDX,
//     VIRTIO_RING_F_INDIRECT_DESC, VIRTIO_NET_F_MRG_RXBUF).
//   - TestBackpressure/SlowGuest: with the flag and a qdisc (pfifo,
//     fq_codel), a full ring stops the queue and the backlog waits in the
//     qdisc; vhost is attached to the full ring and the guest posts one
//     batch at a time, and after every batch the frames the qdisc handed to
//     the ring, the ring's occupancy and the frames received equal what
//     tun's wake rule predicts (a model of __tun_wake_queue and vhost's
//     batches of 64: a wake once ring/2 were consumed since the stop, or the
//     ring is empty). Rings of 32, 128, 256 and 512 give wakes after every
//     batch (32, 128: the boundary) and after every 2nd and 4th batch, so a
//     kernel that wakes on any free slot, or later than ring/2, fails;
//     received = sent - qdisc drops, no tun drop. The ring of 256 also
//     runs with each guest variant (event indexes, indirect descriptors,
//     mergeable buffers two a frame): the same wakes, exactly.
//   - TestNoStall: detach the backend while the queue is stopped (vhost's
//     batch goes back to the ring; the 64 it counted still count, so
//     exactly the 64th read() wakes the queue and the qdisc fills the ring's
//     65 free slots; re-attach), close the vhost device while stopped, and
//     two queue pairs of a multi-queue tap steered by stream, each
//     independent of the other.
//   - TestRace: two senders and a guest consuming ≤ 64 buffers per ms for
//     2 s: no stall, exact ledger, with the flag tun drops nothing (one
//     queue behind one qdisc has one producer; 0 drops in 38 runs on 7.3).
//     On 7.2+ a locked qdisc (pfifo, fq_codel) with two senders also frees
//     frames before enqueue when its defer_list is longer than
//     net.core.qdisc_max_burst (SKB_DROP_REASON_QDISC_BURST_DROP): sendto()
//     says ENOBUFS, no qdisc counts them, so the suite counts them on
//     kfree_skb (internal/dropmon, filtered to the tap) and books them as
//     the ledger's uncounted term.
//   - TestTeardown: tear vhost and its tap apart while the queue is stopped
//     (ring full, 64 frames in the qdisc, vhost holding 63 of its batch),
//     three rounds each: close the vhost-net file, detach the backend
//     (VHOST_NET_SET_BACKEND -1), close the queue file vhost holds, delete
//     the tap, and delete the namespace it lives in (which the qdisc's
//     frames pin until the guest's next batch lets them into the ring).
//     Every step bounded; every frame the guest did not get freed exactly
//     once on the tap (kfree_skb, internal/dropmon), in the ledger's
//     uncounted term with the number tapModel says the test left there;
//     vhost gives its batch back to the ring when it lets go, and after a
//     delete its batch outlives the device until the guest's next buffers
//     (recvmsg on the detached file: EBADFD, the frame freed, the guest
//     gets nothing); the namespace's sockets back to their count after
//     each round.
//   - BenchmarkRX: received pps and lost/s, 1 and 2 senders, stock against
//     the flag with fq_codel (the seed's tap + vhost-net row).
//
// What each kernel must show is in kernels/expectations.
//
// vhost-net is a module on every Debian kernel; this machine's own 6.18 has
// none, so every test skips there, and 000-vhost is absent: the stock
// variants and TestTeardown naming vhost-net ("kernel lacks vhost-net (open
// /dev/vhost-net: no such file or directory)"), the backpressure variants
// naming IFF_BACKPRESSURE, which they probe first. On 5.10–7.2 the stock
// variants pass, and the backpressure variants and TestTeardown skip with
// "kernel lacks IFF_BACKPRESSURE (TUNGETFEATURES=0x7173 lacks 0x80)"
// (0x7133 on 5.10).
// "default" is the guest's net.core.default_qdisc (pfifo_fast, or fq_codel
// where the init sets it).
//
// A skip names its probe (TUNGETFEATURES for IFF_BACKPRESSURE, opening
// /dev/vhost-net, creating fq_codel); on a kernel expected to have the
// feature the skip is a failure (internal/feature).
package vhost
