// Package report renders a matrix run (the folder `xmitcheck matrix` writes,
// its results.json) as one static HTML page and as Markdown for a
// mailing-list reply: the verdict matrix, seeds × kernels, each cell with its
// reason and marked where it differs from the expectation; the kernels and
// their packages; the tests × kernels table, pass, fail, skip or xfail with
// durations and the whole message on hover or click; and charts of the
// benchmarks, read with golang.org/x/perf/benchfmt, a chart per benchmark,
// thread count and unit (metrics lists the units and their titles).
//
// The charts are SVG that this package lays out itself and writes through
// html/template, the page's own template. A chart here is a few bars per
// kernel, an axis and labels, and that is all SVG needs: no JavaScript
// library to vendor, keep patched and ship in every report, nothing to run
// at view time (the page carries a Content-Security-Policy that forbids
// scripts and fetches, and <details> unfolds messages without script), the
// same escaping for a benchmark's name in a chart as for a test's name in a
// table, and bars that are in the DOM, so the browser test can find every
// chart and check it painted. Plotting libraries were the alternative:
// Chart.js or uPlot draw on a canvas from script, go-echarts loads its
// script from a CDN, and gonum/plot would bring its fonts and vector
// backends for what is a hundred lines here.
package report
