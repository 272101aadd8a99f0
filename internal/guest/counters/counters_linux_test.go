package counters

import (
	"encoding/binary"
	"testing"

	"github.com/vishvananda/netlink/nl"
	"gotest.tools/v3/assert"
)

// TestParseQdiscRequeues decodes a qdisc message laid out as the kernel
// sends it, TCA_STATS2 before the legacy TCA_STATS: the requeues come
// from TCA_STATS2 and the legacy block (no requeues field) changes nothing.
func TestParseQdiscRequeues(t *testing.T) {
	u32s := func(vs ...uint32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.NativeEndian.AppendUint32(b, v)
		}
		return b
	}
	basic := append(binary.NativeEndian.AppendUint64(nil, 6000), u32s(100, 0)...) // bytes, packets, padding
	stats2 := nl.NewRtAttr(nl.TCA_STATS2, nil)
	stats2.AddRtAttr(nl.TCA_STATS_BASIC, basic)
	stats2.AddRtAttr(nl.TCA_STATS_QUEUE, u32s(3, 180, 7, 42, 1)) // qlen backlog drops requeues overlimits
	// struct tc_stats { __u64 bytes; __u32 packets, drops, overlimits, bps, pps, qlen, backlog; }
	legacy := append(binary.NativeEndian.AppendUint64(nil, 6000), u32s(100, 7, 1, 0, 0, 3, 180, 0)...)
	var msg []byte
	kind := nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("pfifo"))
	for _, a := range []*nl.RtAttr{kind, stats2, nl.NewRtAttr(nl.TCA_STATS, legacy)} {
		msg = append(msg, a.Serialize()...)
	}
	q, err := parseQdisc(msg)
	assert.NilError(t, err)
	assert.Equal(t, q, Qdisc{Kind: "pfifo", Packets: 100, Qlen: 3, Backlog: 180, Drops: 7, Requeues: 42, Overlimits: 1})

	_, err = parseQdisc(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("pfifo")).Serialize())
	assert.ErrorContains(t, err, "no TCA_STATS2")
}
