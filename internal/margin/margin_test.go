package margin

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestNoteLineParse(t *testing.T) {
	clear(sites)
	for i, took := range []time.Duration{time.Second, 3 * time.Second, 2 * time.Second, 10 * time.Second} {
		Note(10*time.Second, took, i == 3) // one site: this line
	}
	got, ok := Parse("    " + Line())
	assert.Assert(t, ok)
	assert.Assert(t, is.Len(got, 1))
	s := got[0]
	assert.Check(t, is.Regexp(`^margin/margin_test.go:\d+$`, s.Site))
	assert.Check(t, is.DeepEqual(s, Site{Site: s.Site, Limit: 10 * time.Second, Worst: 3 * time.Second, N: 3, Timeouts: 1}))
	assert.Check(t, is.Equal(s.String(), s.Site+": worst 3s of 10s (70% left), 3 waits, 1 timed out"))

	_, ok = Parse(`xmitcheck:{"seed":"003"}`)
	assert.Check(t, !ok)
}

func TestMerge(t *testing.T) {
	a := []Site{{Site: "q/a.go:1", Limit: time.Second, Worst: 100 * time.Millisecond, N: 2}}
	b := []Site{{Site: "q/a.go:1", Limit: time.Second, Worst: 300 * time.Millisecond, N: 1, Timeouts: 1}, {Site: "q/b.go:2", Limit: time.Second, N: 1}}
	assert.Check(t, is.DeepEqual(Merge(a, b), []Site{
		{Site: "q/a.go:1", Limit: time.Second, Worst: 300 * time.Millisecond, N: 3, Timeouts: 1},
		{Site: "q/b.go:2", Limit: time.Second, N: 1},
	}))
}
