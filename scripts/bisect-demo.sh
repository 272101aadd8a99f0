#!/usr/bin/env bash
# Proves `xmitcheck bisect` end to end on a 7.2-era tree: a git repository
# made from Debian's linux-source-7.2 (seed 003 merged) with two ranges of
# commits of our own, each bisected with `git bisect run xmitcheck bisect`:
#
#   breaks:  --expect 003 must name the commit that breaks the fast path
#            (its test inverted, so __netif_schedule() returns early on an
#            empty defer_list: lost wake-ups, not a revert);
#   arrives: from the tree with 003 taken out, --expect '!003' must name
#            the commit that adds it.
#
#   scripts/bisect-demo.sh [WORKDIR]     (default: $XDG_CACHE_HOME/xmitcheck/bisect-demo)
#
# Needs root, qemu and the build tools (make deps). The first build of the
# tree takes 9 to 14 min on 2 idle cores (the minimal config base, as
# docs/speed.md measures it); every later step rebuilds only what its
# commit changed (make and ccache), plus a boot and the qdisc suite.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/xmitcheck/bisect-demo}
x=$top/xmitcheck
(cd "$top" && CGO_ENABLED=0 go build -buildvcs=auto -o xmitcheck ./cmd/xmitcheck)
repo=$work/linux
g() { git -C "$repo" -c user.name=xmitcheck -c user.email=xmitcheck@example.invalid "$@"; }
dev=net/core/dev.c

# One commit of ours on the current branch: a line of documentation, or a
# comment at the top of a C file.
harmless() { printf '\n.. xmitcheck bisect demo: %s\n' "$1" >>"$repo/Documentation/networking/index.rst"; g commit -qam "Documentation: $1"; }
comment() { sed -i "0,/^#include/s||/* xmitcheck demo: $2 */\n#include|" "$repo/$1"; g commit -qam "$(basename "$(dirname "$1")"): $2"; }

if ! g rev-parse -q --verify refs/tags/breaks-bad >/dev/null 2>&1; then
	rm -rf "$work"
	mkdir -p "$work"
	src=$("$x" kernels source debian:7.2 "$work")
	mv "$src" "$repo"
	g init -q -b shipped
	g add -A -f # Debian's tree ignores its own top level (.gitignore: "/*")
	g commit -qm "linux-source-7.2 as Debian ships it (seed 003 merged)"
	grep -q 'if (!llist_empty(&q->defer_list))' "$repo/$dev" || { echo "bisect-demo: $dev has no fast path to work on" >&2; exit 1; }

	g checkout -q -b breaks
	harmless "a harmless change"
	comment net/sched/sch_fifo.c "a comment"
	sed -i 's|^\tif (!llist_empty(&q->defer_list))$|\tif (llist_empty(\&q->defer_list))|' "$repo/$dev"
	g commit -qam "net: return early from __netif_schedule() on an empty defer_list"
	g tag breaks-bad
	comment drivers/net/tun.c "a comment"
	harmless "another harmless change"

	g checkout -q -b arrives shipped
	python3 - "$repo/$dev" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
hunk = """	/* If q->defer_list is not empty, at least one thread is
	 * in __dev_xmit_skb() before llist_del_all(&q->defer_list).
	 * This thread will attempt to run the queue.
	 */
	if (!llist_empty(&q->defer_list))
		return;

"""
assert s.count(hunk) == 1
open(p, "w").write(s.replace(hunk, ""))
open(p + ".hunk", "w").write(hunk)
PY
	mv "$repo/$dev.hunk" "$work/seed-003.hunk"
	g commit -qam "net: take the __netif_schedule() fast path out (before seed 003)"
	g tag arrives-good
	harmless "a harmless change"
	comment net/sched/sch_fifo.c "a comment"
	python3 - "$repo/$dev" "$work/seed-003.hunk" <<'PY'
import sys
p, h = sys.argv[1], open(sys.argv[2]).read()
s = open(p).read()
head = "void __netif_schedule(struct Qdisc *q)\n{\n"
assert s.count(head) == 1
open(p, "w").write(s.replace(head, head + h))
PY
	g commit -qam "net: add a fast path in __netif_schedule() (seed 003)"
	g tag arrives-bad
	comment drivers/net/tun.c "a comment"
	harmless "another harmless change"
fi

# bisect BRANCH GOOD EXPECT WANT: bisect GOOD..BRANCH and check it names WANT.
bisect() {
	g bisect reset >/dev/null 2>&1 || true
	g checkout -q "$1"
	g bisect start "$1" "$2"
	local start=$(date +%s)
	g bisect run "$x" bisect --tree . -C "$top" --expect "$3" ./suites/qdisc
	local took=$(( $(date +%s) - start )) found=$(g rev-parse refs/bisect/bad) want=$(g rev-parse "$4")
	g bisect log | grep -E '^# (good|bad|skip)' || true
	g bisect reset >/dev/null
	if [ "$found" != "$want" ]; then
		echo "bisect-demo: FAIL: --expect $3 on $1 named $(g log -1 --format='%h %s' "$found"), want $(g log -1 --format='%h %s' "$want")" >&2
		exit 1
	fi
	echo "bisect-demo: --expect $3 on $1 named $(g log -1 --format='%h %s' "$want") in ${took}s"
}
bisect breaks shipped 003 breaks-bad
bisect arrives arrives-good '!003' arrives-bad
