package kbuild

import (
	"embed"
	"fmt"
	"slices"
	"strings"
)

// Debug flavours: a sanitizer's options on top of the suites' config, one
// fragment each in debug/.
const (
	DebugKCSAN    = "kcsan"
	DebugKASAN    = "kasan"
	DebugLockdep  = "lockdep"
	DebugKmemleak = "kmemleak"
)

// DebugFlavours are the flavours `kernels build --debug` takes.
var DebugFlavours = []string{DebugKCSAN, DebugKASAN, DebugLockdep, DebugKmemleak}

//go:embed debug/*.config
var debugConfigs embed.FS

// DebugConfig is the config fragment of a debug flavour.
func DebugConfig(flavour string) (string, error) {
	data, err := debugConfigs.ReadFile("debug/" + flavour + ".config")
	if err != nil {
		return "", fmt.Errorf("unknown debug flavour %q: use %s", flavour, strings.Join(DebugFlavours, ", "))
	}
	return string(data), nil
}

// ParseDebug reads --debug values ("kcsan", "kasan,lockdep,kmemleak"),
// each a flavour or a comma-separated list, into a sorted set.
func ParseDebug(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		for f := range strings.SplitSeq(v, ",") {
			f = strings.TrimSpace(f)
			if _, err := DebugConfig(f); err != nil {
				return nil, err
			}
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	slices.Sort(out)
	if slices.Contains(out, DebugKCSAN) && slices.Contains(out, DebugKASAN) {
		return nil, fmt.Errorf("debug flavours kcsan and kasan cannot share a kernel " +
			"(KCSAN depends on !KASAN): build them apart")
	}
	return out, nil
}

// debugSuffix names a build's flavours: "+kasan+kmemleak", "" for none. A
// flavoured build's name, and its object directory, end with it.
func debugSuffix(flavours []string) string {
	if len(flavours) == 0 {
		return ""
	}
	return "+" + strings.Join(flavours, "+")
}

func debugNote(flavours []string) string {
	if len(flavours) == 0 {
		return ""
	}
	return ", debug: " + strings.Join(flavours, ", ")
}
