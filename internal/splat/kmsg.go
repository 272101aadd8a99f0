package splat

import (
	"fmt"
	"strconv"
	"strings"
)

// KmsgRecord splits one /dev/kmsg record, "prio,seq,usec,flags;text" with
// " KEY=value" continuation lines, into its text and the line the console
// shows for it ("[    1.234567] text"). ok is false for anything else.
func KmsgRecord(rec string) (text, line string, ok bool) {
	head, text, ok := strings.Cut(rec, ";")
	if !ok {
		return "", "", false
	}
	text, _, _ = strings.Cut(text, "\n")
	f := strings.Split(head, ",")
	if len(f) < 3 {
		return text, text, true
	}
	us, _ := strconv.ParseInt(f[2], 10, 64)
	return text, fmt.Sprintf("[%5d.%06d] %s", us/1e6, us%1e6, text), true
}
