#!/usr/bin/env bash
# Proves `xmitcheck bisect` end to end (issue 11): a git repository made
# from Debian's linux-source-7.3 with five commits of our own, one of which
# drops seed 003's __netif_schedule() fast path. `git bisect run` with
# `xmitcheck bisect` must name exactly that commit.
#
#   scripts/bisect-demo.sh [WORKDIR]     (default: $XDG_CACHE_HOME/xmitcheck/bisect-demo)
#
# Needs root, qemu and the build tools (make deps). The first build of the
# tree takes 25-60 min on 2 cores; every later step rebuilds only what its
# commit changed (make and ccache): 1.5-3 min, plus a boot and the tests.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/xmitcheck/bisect-demo}
x=$top/xmitcheck
(cd "$top" && CGO_ENABLED=0 go build -o xmitcheck ./cmd/xmitcheck)
repo=$work/linux
g() { git -C "$repo" -c user.name=xmitcheck -c user.email=xmitcheck@example.invalid "$@"; }

if ! g rev-parse -q --verify refs/tags/demo-bad >/dev/null 2>&1; then
	rm -rf "$work"
	mkdir -p "$work"
	src=$("$x" kernels source debian:7.3 "$work")
	mv "$src" "$repo"
	g init -q
	g add -A -f # Debian's tree ignores its own top level (.gitignore: "/*")
	g commit -qm "linux-source-7.3 as Debian ships it"
	g tag demo-good
	note() { printf '\n%s\n' "$2" >>"$repo/$1"; g commit -qam "$3"; }
	note Documentation/networking/index.rst ".. xmitcheck bisect demo: a harmless change" "Documentation: a harmless change"
	sed -i 's|^void __netif_schedule(struct Qdisc \*q)$|/* xmitcheck demo: schedule the qdisc */\n&|' "$repo/net/core/dev.c"
	g commit -qam "net: a comment above __netif_schedule()"
	patch -s -d "$repo" -p1 -R <"$top/scripts/patches/seed-003.patch"
	g commit -qam "net: drop the __netif_schedule() fast path (the bad commit)"
	g tag demo-bad
	sed -i '0,/^#include/s||/* xmitcheck demo: a comment */\n#include|' "$repo/drivers/net/tun.c"
	g commit -qam "tun: a comment"
	note Documentation/networking/index.rst ".. and another" "Documentation: another harmless change"
fi

g bisect reset >/dev/null 2>&1 || true
g checkout -q master 2>/dev/null || g checkout -q main
g bisect start HEAD demo-good
start=$(date +%s)
g bisect run "$x" bisect --tree . -C "$top" --expect 003 -run 'TestDeferList|TestFastPath' ./suites/qdisc
took=$(( $(date +%s) - start ))
found=$(g rev-parse refs/bisect/bad)
want=$(g rev-parse demo-bad)
g bisect log | grep -E '^# (good|bad|skip)' || true
g bisect reset >/dev/null
if [ "$found" != "$want" ]; then
	echo "bisect-demo: FAIL: bisect named $found, the bad commit is $want" >&2
	exit 1
fi
echo "bisect-demo: bisect named the bad commit $(g log -1 --format='%h %s' "$want") in ${took}s"
