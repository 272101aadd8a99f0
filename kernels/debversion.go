package kernels

import "strings"

// compareVersions orders two Debian package versions ([epoch:]upstream[-revision])
// the way dpkg does (deb-version(7)): <0 when a is older than b, 0 when equal,
// >0 when newer. "7.3.4-1~bpo13+1" < "7.3.4-1", and "6.12.117-1" > "6.12.107-1".
func compareVersions(a, b string) int {
	ea, ua, ra := splitVersion(a)
	eb, ub, rb := splitVersion(b)
	if c := compareNumbers(ea, eb); c != 0 {
		return c
	}
	if c := compareFragment(ua, ub); c != 0 {
		return c
	}
	return compareFragment(ra, rb)
}

func splitVersion(v string) (epoch, upstream, revision string) {
	if i := strings.IndexByte(v, ':'); i >= 0 {
		epoch, v = v[:i], v[i+1:]
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		v, revision = v[:i], v[i+1:]
	}
	return epoch, v, revision
}

// compareFragment is dpkg's verrevcmp: alternating runs of non-digits
// (compared by order, '~' before everything, even the end) and digits
// (compared as numbers).
func compareFragment(a, b string) int {
	for a != "" || b != "" {
		for (a != "" && !isDigit(a[0])) || (b != "" && !isDigit(b[0])) {
			ca, cb := charOrder(a), charOrder(b)
			if ca != cb {
				return ca - cb
			}
			a, b = a[1:], b[1:]
		}
		na, nb := digitRun(a), digitRun(b)
		if c := compareNumbers(a[:na], b[:nb]); c != 0 {
			return c
		}
		a, b = a[na:], b[nb:]
	}
	return 0
}

// charOrder weighs the first byte of s: '~' sorts before the end of the
// string, the end before anything else, letters before other characters.
func charOrder(s string) int {
	switch {
	case s == "" || isDigit(s[0]):
		return 0
	case s[0] == '~':
		return -1
	case s[0] >= 'A' && s[0] <= 'Z' || s[0] >= 'a' && s[0] <= 'z':
		return int(s[0])
	default:
		return int(s[0]) + 256
	}
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}

// compareNumbers compares two runs of decimal digits of any length.
func compareNumbers(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
