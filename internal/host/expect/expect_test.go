package expect

import (
	"github.com/xmitcheck/xmitcheck/internal/feature"

	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestParse(t *testing.T) {
	e, err := Parse("000, !003 004 IFF_BACKPRESSURE,!fq_codel xfail:devmap-same-device")
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(e.Seeds, map[feature.Seed]bool{
		feature.Seed000Tun: true, feature.Seed000Vhost: true, feature.Seed003: false, feature.Seed004: true,
	}))
	assert.Check(t, is.DeepEqual(e.Features,
		map[feature.Feature]bool{feature.IFFBackpressure: true, feature.FqCodel: false}))
	assert.Check(t, e.Known[feature.IssueDevmapSameDevice])
	assert.Check(t, is.Equal(e.String(), "000-tun,000-vhost,!003,004,IFF_BACKPRESSURE,!fq_codel,xfail:devmap-same-device"))
	back, err := Parse(e.String())
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(back, e))

	_, err = Parse("003,tcp")
	assert.ErrorContains(t, err, `unknown item "tcp"`)
	_, err = Parse("xfail:nothing")
	assert.ErrorContains(t, err, `unknown item "xfail:nothing"`)
}

func TestWantFeature(t *testing.T) {
	e, err := Parse("000-vhost")
	assert.NilError(t, err)
	assert.Check(t, e.WantFeature(feature.IFFBackpressure), "a seed expected present wants the features it needs")
	assert.Check(t, e.WantFeature(feature.VhostNet))
	assert.Check(t, !e.WantFeature(feature.QdiscDeferList))
}

func TestOverride(t *testing.T) {
	file, _ := Parse("!000 !003 004 fq_codel xfail:devmap-same-device")
	user, _ := Parse("003")
	got := file.Override(user)
	assert.Check(t, is.Equal(got.String(), "!000-tun,!000-vhost,003,004,fq_codel,xfail:devmap-same-device"))
}

func TestParseEmptyItem(t *testing.T) {
	for _, spec := range []string{"000,,003", "000,", ",004", " , "} {
		_, err := Parse(spec)
		assert.Check(t, is.ErrorContains(err, "an empty item between commas"), "%q", spec)
	}
	for _, spec := range []string{"", "  ", "000, 003", "000 003"} {
		_, err := Parse(spec)
		assert.Check(t, err, "%q", spec)
	}
}
