package cachefile

import (
	"fmt"
	"io"
)

// Note prints one progress line when progress is not nil.
func Note(progress io.Writer, format string, args ...any) {
	if progress != nil {
		fmt.Fprintf(progress, format+"\n", args...)
	}
}
