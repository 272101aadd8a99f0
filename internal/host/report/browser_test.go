package report

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// TestBrowser opens the fixture's page in a headless Chromium, reads it
// back from the DOM and a screenshot: no console message, no request but
// the page, the verdict table as the JSON says, a failure message whole on
// hover and on click, and no blank chart. With -artifacts the page and the
// screenshot stay in the artifact directory.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a headless Chromium: not under -short")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed: run `make deps DEPS=browser`")
	}
	snaps := fixture(t)
	snaps[1].Costs = costRowsFixture()
	b := openPage(t, chromium, snaps)
	t.Run("verdicts", func(t *testing.T) { b.checkVerdicts(t, snaps) })
	t.Run("failure message", func(t *testing.T) { b.checkFailureMessage(t, snaps) })
	t.Run("charts", b.checkCharts)
	t.Run("cost charts", func(t *testing.T) { b.checkCostCharts(t, len(snaps[1].Costs)) })
	assert.Check(t, is.Len(b.heard(), 0), "the page logged or fetched: %q", b.heard())
}

// browserPage is the report open in a headless Chromium, and everything
// the page said or asked for since.
type browserPage struct {
	ctx   context.Context
	dir   string
	mu    sync.Mutex
	noise []string
}

// openPage writes the report of snaps to the test's artifact directory and
// opens it in chromium, listening to what the page logs and requests.
func openPage(t *testing.T, chromium string, snaps []results.Snapshot) *browserPage {
	var html bytes.Buffer
	assert.NilError(t, WriteHTML(&html, snaps))
	b := &browserPage{dir: t.ArtifactDir()}
	path := filepath.Join(b.dir, "report.html")
	assert.NilError(t, os.WriteFile(path, html.Bytes(), 0o644))
	url := "file://" + path

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, cancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 1000))
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	b.ctx = bctx
	assert.NilError(t, chromedp.Listen(bctx, func(ev any) { b.listen(ev, url) }))
	assert.NilError(t, chromedp.Do(bctx, chromedp.Navigate(url)))
	return b
}

// listen notes what the page says or asks for: it should say and ask
// nothing.
func (b *browserPage) listen(ev any, url string) {
	note := func(format string, args ...any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.noise = append(b.noise, fmt.Sprintf(format, args...))
	}
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range ev.Args {
			args = append(args, cmp.Or(string(a.Value), a.Description))
		}
		note("console.%s: %s", ev.Type, strings.Join(args, " "))
	case *runtime.EventExceptionThrown:
		note("exception: %s", ev.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		note("log %s from %s: %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
	case *network.EventRequestWillBeSent:
		if ev.Request.URL != url {
			note("request for %s", ev.Request.URL)
		}
	}
}

func (b *browserPage) heard() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.noise)
}

// checkVerdicts reads the verdict table back from the DOM.
func (b *browserPage) checkVerdicts(t *testing.T, snaps []results.Snapshot) {
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[domVerdicts](`(() => {
		const t = document.getElementById('verdicts');
		const text = (e, sel) => e.querySelector(sel)?.textContent ?? '';
		return {
			kernels: [...t.tHead.rows[0].cells].slice(1).map(c => c.textContent),
			rows: [...t.tBodies[0].rows].map(r => ({
				seed: text(r.cells[0], '.seed'),
				cells: [...r.cells].slice(1).map(c => ({
					state: text(c, '.state'), why: text(c, '.why'), title: c.title,
					mismatch: c.classList.contains('mismatch')})),
			})),
		};
	})()`))
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, wantVerdicts(snaps)))
}

// checkFailureMessage: the multi-line failure of suites/qdisc.TestFastPath
// on the second kernel is whole in the cell's title (hover), and shown
// when its summary is clicked.
func (b *browserPage) checkFailureMessage(t *testing.T, snaps []results.Snapshot) {
	test, k := "suites/qdisc.TestFastPath", 1
	i := slices.IndexFunc(snaps[k].Tests, func(s results.SnapshotTest) bool { return s.Package+"."+s.Name == test })
	assert.Assert(t, i >= 0)
	want := snaps[k].Tests[i].Why
	assert.Assert(t, strings.Count(want, "\n") > 2, "the fixture's message should be several lines")
	name, _ := json.Marshal(test)
	row, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf(
		`[...document.querySelectorAll('#tests tbody tr')].findIndex(r => r.cells[0].textContent === %s)`, name)))
	assert.NilError(t, err)
	assert.Assert(t, row >= 0, "no row for %s in the tests table", test)
	cell := fmt.Sprintf("#tests tbody tr:nth-child(%d) td:nth-child(%d)", row+1, k+2)

	title, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).title`, cell)))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(title, want))

	shown := fmt.Sprintf(`(() => {
		const p = document.querySelector(%q);
		return p.checkVisibility() ? p.innerText : null;
	})()`, cell+" pre")
	before, err := chromedp.Run(b.ctx, chromedp.Evaluate[*string](shown))
	assert.NilError(t, err)
	assert.Check(t, before == nil, "the message shows before the click")
	assert.NilError(t, chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(cell+" summary"))))
	after, err := chromedp.Run(b.ctx, chromedp.Evaluate[*string](shown))
	assert.NilError(t, err)
	assert.Assert(t, after != nil, "the message does not show after a click on its summary")
	assert.Check(t, is.Equal(*after, want))
}

// checkCharts takes a screenshot of the whole page and checks that every
// chart has ink, and colour over most of its bars' area.
func (b *browserPage) checkCharts(t *testing.T) {
	charts, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]domBox](
		`[...document.querySelectorAll('figure.chart svg:not(.forest)')].map(s => {
		const r = s.getBoundingClientRect();
		const bars = [...s.querySelectorAll('rect.bar')].map(b => b.getBoundingClientRect())
			.reduce((a, b) => a + b.width * b.height, 0);
		return {title: s.getAttribute('aria-label'), x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height, bars};
	})`))
	assert.NilError(t, err)
	assert.Check(t, is.Len(charts, 12), "the fixture has 2 benchmarks × 2 groups × 3 units")
	img, scale := b.screenshot(t)
	for _, c := range charts {
		ink, colour, area := pixels(img, c, scale)
		// Axes, grid and labels are grey ink, bars are colour: the
		// colour must cover most of the bars' area (all but their
		// antialiased edges).
		bars := int(c.Bars * scale * scale)
		assert.Check(t, bars > 0, "%s: no bars", c.Title)
		assert.Check(t, ink > area/100, "%s: %d of %d pixels drawn", c.Title, ink, area)
		assert.Check(t, colour >= bars*8/10, "%s: %d pixels in colour, bars cover %d", c.Title, colour, bars)
		t.Logf("%s: %d of %d pixels drawn, %d in colour, bars cover %d", c.Title, ink, area, colour, bars)
	}
}

// checkCostCharts: a forest plot per kernel and seed with cost rows, a
// lane per row, and each painted: the interval in ink, the claim's diamond
// in colour.
func (b *browserPage) checkCostCharts(t *testing.T, rows int) {
	charts, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]domBox](
		`[...document.querySelectorAll('figure.chart svg.forest')].map(s => {
		const r = s.getBoundingClientRect();
		return {title: s.getAttribute('aria-label'), x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height,
			bars: s.querySelectorAll('g.lane').length};
	})`))
	assert.NilError(t, err)
	assert.Assert(t, is.Len(charts, 1), "the fixture's cost rows are one kernel's, one seed's")
	assert.Check(t, is.Equal(int(charts[0].Bars), rows), "a lane per row")
	img, scale := b.screenshot(t)
	ink, colour, area := pixels(img, charts[0], scale)
	assert.Check(t, ink > area/100, "%s: %d of %d pixels drawn", charts[0].Title, ink, area)
	assert.Check(t, colour > 50*rows, "%s: %d pixels in colour for %d claim diamonds", charts[0].Title, colour, rows)
	t.Logf("%s: %d of %d pixels drawn, %d in colour", charts[0].Title, ink, area, colour)
}

// screenshot takes a screenshot of the whole page into the artifact
// directory and returns it with its pixels per CSS pixel.
func (b *browserPage) screenshot(t *testing.T) (image.Image, float64) {
	size, err := chromedp.Run(b.ctx, chromedp.Evaluate[[2]float64](
		`[document.documentElement.scrollWidth, document.documentElement.scrollHeight]`))
	assert.NilError(t, err)
	shot, err := chromedp.Call(b.ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Format: page.CaptureScreenshotFormatPng, CaptureBeyondViewport: new(true),
		Clip: &page.Viewport{Width: size[0], Height: size[1], Scale: 1}})
	assert.NilError(t, err)
	shotPath := filepath.Join(b.dir, "report.png")
	assert.NilError(t, os.WriteFile(shotPath, shot.Data, 0o644))
	t.Logf("screenshot: %s", shotPath)
	img, err := png.Decode(bytes.NewReader(shot.Data))
	assert.NilError(t, err)
	return img, float64(img.Bounds().Dx()) / size[0]
}

type domVerdicts struct {
	Kernels []string `json:"kernels"`
	Rows    []domRow `json:"rows"`
}

type domRow struct {
	Seed  string    `json:"seed"`
	Cells []domCell `json:"cells"`
}

type domCell struct {
	State    string `json:"state"`
	Why      string `json:"why"`
	Title    string `json:"title"`
	Mismatch bool   `json:"mismatch"`
}

type domBox struct {
	Title string  `json:"title"`
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	W     float64 `json:"w"`
	H     float64 `json:"h"`
	// Bars is the area the chart's bars cover.
	Bars float64 `json:"bars"`
}

// wantVerdicts is the verdict table as the JSON has it: a row per seed
// some kernel judged, in table order; "—" where a kernel did not.
func wantVerdicts(snaps []results.Snapshot) domVerdicts {
	var want domVerdicts
	for _, s := range snaps {
		want.Kernels = append(want.Kernels, cmp.Or(s.Name, s.Kernel))
	}
	for _, seed := range feature.Seeds {
		row, any := domRow{Seed: string(seed.Seed)}, false
		for _, s := range snaps {
			c := domCell{State: "—"}
			for _, v := range s.Verdicts {
				if v.Seed == seed.Seed {
					c, any = domCell{State: string(v.State), Why: v.Why, Title: v.Why, Mismatch: v.Mismatch()}, true
				}
			}
			row.Cells = append(row.Cells, c)
		}
		if any {
			want.Rows = append(want.Rows, row)
		}
	}
	return want
}

// pixels counts, inside box (CSS pixels; scale turns them into the
// image's), the pixels that are not the white page (ink) and those in
// colour (the bars); area is the box's pixels.
func pixels(img image.Image, box domBox, scale float64) (ink, colour, area int) {
	r := image.Rect(int(box.X*scale), int(box.Y*scale), int((box.X+box.W)*scale), int((box.Y+box.H)*scale))
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			c := []int{int(cr >> 8), int(cg >> 8), int(cb >> 8)}
			area++
			if slices.Min(c) < 240 {
				ink++
			}
			if slices.Max(c)-slices.Min(c) > 60 {
				colour++
			}
		}
	}
	return ink, colour, area
}
