package kernels

import (
	"fmt"
	"io"
)

// note prints one progress line when progress is not nil.
func note(progress io.Writer, format string, args ...any) {
	if progress != nil {
		fmt.Fprintf(progress, format+"\n", args...)
	}
}
