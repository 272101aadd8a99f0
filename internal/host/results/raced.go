package results

import "fmt"

// raced lists the races the tests drove under a sanitizer (feature.Record
// Raced): "test: seed: N handshakes; what the sanitizer did", so that a
// run without a report says how much its sanitizer watched.
func (r *Run) raced(obs map[*Test]observation) []string {
	var out []string
	for _, t := range r.Tests {
		for _, rec := range obs[t].records {
			if rec.Raced != "" {
				out = append(out, fmt.Sprintf("%s.%s: %s: %d handshakes; %s", ShortPackage(t.Package), t.Name,
					rec.Raced, rec.Handshakes, rec.Why))
			}
		}
	}
	return out
}
