// Package tun validates tun/tap stop-queue semantics: what seed 000
// ("tun/tap & vhost-net: avoid ptr_ring tail-drop when a qdisc is present",
// opt-in through IFF_BACKPRESSURE in Linux 7.3) and its 2014 ancestor, seed
// 002 ("tun: stop tx queue when limit is hit", never merged), promise about
// a tap whose ring fills.
//
// Every test builds its own namespace (netenv), a tap through /dev/net/tun
// ioctls with ring size R = txqueuelen, a root "pfifo limit P" (or noqueue)
// through netlink, and sends raw Ethernet frames from an AF_PACKET socket
// bound to the tap, so every frame passes the qdisc and tun_net_xmit and is
// counted. Each assertion prints the whole ledger:
//
//	sent = received (read) + device drops (tun's tx_dropped) + qdisc drops
//	       + qdisc backlog + in device (the ring) (+ uncounted)
//
// (counters.Accounting) where "uncounted" are frames the kernel frees
// without a counter (a ring shrunk by a txqueuelen change, a ring purged
// when its queue detaches, a qdisc reset when the link goes down, a
// QDISC_BURST_DROP before the qdisc on 7.2+).
//
// Every frame carries its sender's stream and sequence number
// (traffic.Frame), and the readers follow each stream (traffic.Reader):
// every test asserts that each stream arrived in order with no frame twice,
// holds only numbers its sender used, and that the frames missing from the
// streams are exactly the ledger's frames not received (checkStreams);
// where the reader was idle while the tap filled, the frames read are the
// first ones sent (tail-drop, a qdisc's tail-drop and a stopped queue all
// lose the newest).
//
// The tests, one behaviour each; "stock" variants run with the flag off,
// "backpressure" variants with it on (and skip, naming the probe, where
// TUNGETFEATURES lacks IFF_BACKPRESSURE):
//
//	TestProbe                      TUNGETFEATURES offers 0x80 exactly when TUNSETIFF keeps it
//	TestClassify/flag=*/qdisc=*    where the frames beyond the ring go: the qdisc (stopped queue) or tun (tail-drop)
//	TestTailDrop/qdisc=*           stock: exactly R frames in the ring, the rest tun's tx_dropped (FULL_RING)
//	TestBackpressure/StopAtLimit   the produce that fills the ring stops the queue; the qdisc holds the rest
//	TestBackpressure/NoqueueKeepsTailDrop  no qdisc: tail-drop as before
//	TestBackpressure/WakeHysteresis  the reader wakes the queue at ring/2 consumed, not before
//	TestNoStall, TestMultiQueue    no queue stays stopped: every frame arrives; each queue stops and wakes on its own
//	TestRace                       several senders: the ledger balances, no tun drop with the flag
//	TestPacing                     a blocking sender with a small send buffer: what waits, what drops
//	TestModes/*                    the same sequence on tun (with and without packet info), with NAPI, with
//	                               virtio-net headers, and with TCP packets over the MTU, whole (TSO) or segmented
//	TestTeardown/*                 a stopped tap closed, detached, deleted, or its namespace deleted, in rounds:
//	                               every frame it held freed exactly once, no socket left, no step that hangs
//
// What each kernel must show is in kernels/expectations.
//
// A skip names the probe that decided it: TUNGETFEATURES lacking
// IFF_BACKPRESSURE (0x80), kernel BTF lacking SKB_DROP_REASON_FULL_RING.
//
// TestClassify/flag=off/qdisc=pfifo is seed 002's test: with the flag off
// and a pfifo, R+32 frames to an idle reader. A queue stopped at
// txqueuelen (the qdisc holds the rest, tun drops nothing, every frame is
// read in order) is 002 present; exactly the old tail-drop (tun's
// tx_dropped grows by 32, the qdisc holds and drops nothing, the reader gets
// frames 0 to R-1) is 002 absent (feature.Absent: XFAIL where
// kernels/expectations says !002); any other shape fails. The other three
// subtests are seed 000's: "backpressure" only with the flag, offered, and
// a qdisc.
//
// Seed 002's semantics with the flag, stop at the limit instead of
// dropping, are what TestBackpressure asserts: its names say "StopAtLimit",
// the limit is txqueuelen as in 002, and the wake is 000's hysteresis. The
// exact stop point is 000's (read in 7.3's tun_net_xmit): the produce that
// leaves the ring full stops the queue, so the ring holds exactly R and the
// qdisc everything after; 002, on the pre-ptr_ring socket queue, stopped one
// frame later and woke as soon as the queue was below the limit.
//
// TestPacing asks what seed 000's "lost: 0 pps" means for a sender that can
// wait: a blocking AF_PACKET socket with a small send buffer
// (traffic.NewPacedSender). A full qdisc never makes a sender wait: it drops
// (NET_XMIT_DROP), which packet_snd returns as ENOBUFS. The one wait is the
// send buffer's (sock_alloc_send_pskb), and a frame stays charged to it
// until tun orphans it as it enters the ring, so with the flag a stopped
// queue keeps the qdisc's frames charged: once they fill the buffer the
// sender waits, and nothing is lost anywhere (sndbuf_fills_first). A pfifo
// that fills before the buffer drops and refuses instead, the sender does
// not wait (qdisc_fills_first); with the flag off tun tail-drops and the
// sender never waits (stock).
//
// TestModes runs the sequence of TestBackpressure (R+40 frames to an idle
// reader, then every frame read) stock and with the flag on IFF_TUN devices
// (reads with struct tun_pi, or with IFF_NO_PI none), IFF_NAPI and
// IFF_NAPI_FRAGS taps (they change how written packets enter the stack, not
// the transmit path), and IFF_VNET_HDR taps, whose reads carry a
// virtio_net_hdr: checked and stripped by an entryReader, which passes the
// frames to a traffic.Reader. Its gso subtests send TCP/IPv4 packets of 25
// frames (1,554 bytes, over the MTU) whose virtio_net_hdr asks for
// segmentation (gsoSender, AF_PACKET with PACKET_VNET_HDR, as a guest's
// packet forwarded by its VMM): a tap offering TSO takes them whole, one
// ring entry each; one that does not gets their segments, and the R-th
// segment stops the queue in the middle of a packet, whose other segments
// the qdisc requeues (newGSOFate models both, to the qdisc's qlen and
// requeues).
//
// TestTeardown tears a tap down while its queue is stopped with R frames
// in the ring and 24 in the qdisc, three rounds of each (a fixed number,
// so a soak compares the same subtests): closing the only queue file or detaching one of two
// stopped queues (each also with IFF_NAPI|IFF_NAPI_FRAGS, whose instance
// the teardown disables and deletes), deleting the link over netlink, and
// deleting the namespace the tap was moved to (its queue file open
// elsewhere). Every step is bounded;
// the frames the teardown frees are the ledger's "uncounted", with the
// number the test left there; a kfree_skb counter on the tap (dropmon, all
// reasons) must count exactly the frames not read, and the namespace that
// opened the queue files must have exactly its sockets again after each
// round (sockstat "sockets: used": a queue file is a socket, and a sender
// stays one while a frame of it is not freed). With backpressure a deleted
// namespace outlives every handle while its stopped qdisc holds frames of
// its sockets, until the reader has moved the last of them into the ring;
// stock, it goes at once.
//
// TestRace allows no tun drop with backpressure: none in 24 runs measured on
// 7.3 (race_test.go says why AF_PACKET senders cannot race on the ring).
//
// The benchmarks (BenchmarkTap) report received pps and lost/s with 1 and 2
// sending threads, flag off against flag on with fq_codel, the shape of the
// table in seed 000, and the frames sent per second and per CPU-second.
// Their senders send 64 frames per sendmmsg (traffic.Sender), as the C
// reference /work/shared/tools/tapbench.c does, and their reader
// busy-polls the tap (traffic.Reader.ReadToEnd) on a CPU of its own, where
// tapbench.c's sleeps in read(2) wherever the scheduler puts it; this
// compares them on the running kernel, 10 interleaved rounds of 5 s (as
// root, from the repository's top; it compiles both into a temporary
// directory):
//
//	suites/tun/testdata/tapbench-compare.sh /work/shared/tools/tapbench.c 10 5
package tun
