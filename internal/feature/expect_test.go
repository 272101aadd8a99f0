package feature

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestParseExpectation(t *testing.T) {
	e, err := ParseExpectation("000, !003 004 IFF_BACKPRESSURE,!fq_codel xfail:devmap-same-device")
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(e.Seeds, map[Seed]bool{Seed000Tun: true, Seed000Vhost: true, Seed003: false, Seed004: true}))
	assert.Check(t, is.DeepEqual(e.Features, map[Feature]bool{IFFBackpressure: true, FqCodel: false}))
	assert.Check(t, e.Known[IssueDevmapSameDevice])
	assert.Check(t, is.Equal(e.String(), "000-tun,000-vhost,!003,004,IFF_BACKPRESSURE,!fq_codel,xfail:devmap-same-device"))
	back, err := ParseExpectation(e.String())
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(back, e))

	_, err = ParseExpectation("003,tcp")
	assert.ErrorContains(t, err, `unknown item "tcp"`)
	_, err = ParseExpectation("xfail:nothing")
	assert.ErrorContains(t, err, `unknown item "xfail:nothing"`)
}

func TestWantFeature(t *testing.T) {
	e, err := ParseExpectation("000-vhost")
	assert.NilError(t, err)
	assert.Check(t, e.WantFeature(IFFBackpressure), "a seed expected present wants the features it needs")
	assert.Check(t, e.WantFeature(VhostNet))
	assert.Check(t, !e.WantFeature(QdiscDeferList))
}

func TestOverride(t *testing.T) {
	file, _ := ParseExpectation("!000 !003 004 fq_codel xfail:devmap-same-device")
	user, _ := ParseExpectation("003")
	got := file.Override(user)
	assert.Check(t, is.Equal(got.String(), "!000-tun,!000-vhost,003,004,fq_codel,xfail:devmap-same-device"))
}
