package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// Load reads dir/results.json, the kernels' snapshots `xmitcheck matrix`
// writes.
func Load(dir string) ([]results.Snapshot, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("%s is a file: give the folder `xmitcheck matrix --out` wrote", dir)
	}
	path := filepath.Join(dir, "results.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no %s: `xmitcheck matrix --out %s` writes it: %w", path, dir, err)
	}
	if err != nil {
		return nil, err
	}
	var snaps []results.Snapshot
	if err := json.Unmarshal(data, &snaps); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			line, col := position(data, syn.Offset-1)
			return nil, fmt.Errorf("%s:%d:%d: not valid JSON: %w", path, line, col, err)
		case errors.As(err, &typ):
			line, col := position(data, typ.Offset-1)
			return nil, fmt.Errorf("%s:%d:%d: not a JSON array of kernel results as `xmitcheck matrix` writes: %w",
				path, line, col, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(snaps) == 0 {
		return nil, fmt.Errorf("%s holds no kernel's results", path)
	}
	for i, s := range snaps {
		if s.Kernel == "" {
			return nil, fmt.Errorf("%s: entry %d has no Kernel: not a kernel result as `xmitcheck matrix` writes", path, i+1)
		}
	}
	return snaps, nil
}

// position is the line and column, both from 1, of the byte at off (the
// JSON errors' Offset less one: they count the bytes read).
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	return line, len(before) - bytes.LastIndexByte(before, '\n')
}
