package report

import (
	"bytes"
	_ "embed"
	"html/template"
	"io"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

//go:embed page.html.tmpl
var pageHTML string

var pageTmpl = template.Must(template.New("page").
	Funcs(template.FuncMap{"dur": dur, "ranOn": ranOn, "boot": boot, "pct": pctText, "jclass": judgmentClass}).
	Parse(pageHTML))

// WriteHTML writes the report as one HTML page that needs nothing else:
// no script, no font, no image, no network (its Content-Security-Policy
// forbids every fetch).
func WriteHTML(w io.Writer, snaps []results.Snapshot) error {
	v := newView(snaps)
	data := struct {
		view
		SVG     []svgChart
		Cost    []costChart
		Metrics []struct{ Unit, Title string }
	}{view: v, Metrics: metrics, Cost: costCharts(v.Kernels)}
	for i, c := range v.Charts {
		data.SVG = append(data.SVG, layout(i, c, v.Kernels))
	}
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, data); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
