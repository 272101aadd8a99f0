package margin

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

func TestNoteLineParse(t *testing.T) {
	clear(sites)
	for i, took := range []time.Duration{time.Second, 3 * time.Second, 2 * time.Second, 10 * time.Second} {
		Note(10*time.Second, took, i == 3) // one site: this line
	}
	got, ok := feature.ParseMargins("    " + Line())
	assert.Assert(t, ok)
	assert.Assert(t, is.Len(got, 1))
	s := got[0]
	assert.Check(t, is.Regexp(`^margin/margin_test.go:\d+$`, s.Site))
	want := feature.Margin{Site: s.Site, Limit: 10 * time.Second, Worst: 3 * time.Second, N: 3, Timeouts: 1}
	assert.Check(t, is.DeepEqual(s, want))
	assert.Check(t, is.Equal(s.String(), s.Site+": worst 3s of 10s (70% left), 3 waits, 1 timed out"))

	_, ok = feature.ParseMargins(`xmitcheck:{"seed":"003"}`)
	assert.Check(t, !ok)
}
