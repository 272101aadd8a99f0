#!/usr/bin/env bash
# The fault table: each fault made to happen for real, with the verdict of
# the seed it hits and the exit codes of `run` and `bisect` for it.
#   scripts/faults.sh            the harness's and the environment's faults
#                                (debian:7.3 in a VM; nothing to build)
#   scripts/faults.sh TREE       and the kernel's, which need a kernel with
#                                LKDTM, built once (half an hour on 2 cores
#                                the first time) from a tree such as Debian's
#                                linux-source-7.3, on the defconfig base the
#                                table was proven on
# Run it as root (the cache rows mount small tmpfs) and under nice on a
# shared machine: it boots one VM at a time.
set -uo pipefail
cd "$(dirname "$0")/.."
tree=${1:-}
x=$PWD/xmitcheck
go build -o "$x" ./cmd/xmitcheck || exit 2
out=$(mktemp -d)
mounts=()
cleanup() {
	for m in "${mounts[@]}"; do umount "$m"; done
	rm -rf "$out"
}
trap cleanup EXIT
real=${XDG_CACHE_HOME:-$HOME/.cache}/xmitcheck
gocache=$(go env GOCACHE)

printf '| fault | verdict | run exit | bisect exit |\n| --- | --- | --- | --- |\n'

# verdicts prints the SEEDS' verdicts of a run's output, "none" without.
verdicts() {
	local v
	v=$(grep -oE "^  ($1) +(present|absent|BROKEN|error)" "$2" | awk '{print $1"="$2}' | xargs)
	echo "${v:-none}"
}

# cache makes DIR an XDG_CACHE_HOME of its own that shares the kernels
# (and Go's build cache, through GOCACHE) with the real one.
cache() {
	mkdir -p "$1/xmitcheck"
	ln -sfn "$real/kernels" "$1/xmitcheck/kernels"
}

# row runs `run` with ARGS in the environment ENV and prints the verdicts
# of SEEDS and the line that names the fault (matched by NOTE).
row() {
	local name=$1 seeds=$2 note=$3 env=$4
	shift 4
	env GOCACHE="$gocache" $env nice -n 19 "$x" run "$@" >"$out/run" 2>&1
	local rc=$?
	local why
	why=$(grep -m1 -E "$note" "$out/run")
	printf '| %s | %s | %s | - |\n' "$name" "$(verdicts "$seeds" "$out/run")" "$rc"
	[ -n "$why" ] && printf '|   ↳ `%s` | | | |\n' "${why//|/\\|}"
	cp "$out/run" "/tmp/faults-${name// /-}.run.log"
}

ordering=(--kernel debian:7.3 -run '^TestOrdering$' ./suites/devmap)

# The suites' cache damaged: an object cut short after a first run.
c=$out/damaged
cache "$c"
XDG_CACHE_HOME=$c GOCACHE=$gocache nice -n 19 "$x" run "${ordering[@]}" >/dev/null 2>&1
chmod u+w "$c"/xmitcheck/suites/*/suites/devmap/bpf_bpfel.o
truncate -s 100 "$c"/xmitcheck/suites/*/suites/devmap/bpf_bpfel.o
row "suites cache damaged" 004 "differs from the source" "XDG_CACHE_HOME=$c" "${ordering[@]}"

# The cache read-only, and the cache on a full disk (a 1 MB tmpfs).
mkdir -p "$out/ro" "$out/full"
mount -t tmpfs -o ro,size=1m tmpfs "$out/ro" && mounts+=("$out/ro")
mount -t tmpfs -o size=1m tmpfs "$out/full" && mounts+=("$out/full")
row "cache read-only" 004 "not writable" "XDG_CACHE_HOME=$out/ro" "${ordering[@]}"
cache "$out/full"
row "cache on a full disk" 004 "disk is full" "XDG_CACHE_HOME=$out/full" "${ordering[@]}"

# A checkout whose BPF object the loader cannot parse (-C, so no cache
# check can repair it).
co=$out/checkout
mkdir -p "$co"
git ls-files -z | xargs -0 cp --parents -t "$co"
truncate -s 100 "$co/suites/devmap/bpf_bpfel.o"
row "BPF object cut short" 004 "does not parse" "" -C "$co" "${ordering[@]}"

# A modular kernel given as a path without its modules: veth, tun,
# vhost-net and some qdiscs cannot load. The image alone, as copied from
# /boot, and a cache that knows no kernel of its release.
vmlinuz=$(ls "$real"/kernels/debian-7.3/boot/vmlinuz-* 2>/dev/null | head -1)
if [ -n "$vmlinuz" ]; then
	mkdir -p "$out/img" && cp "$vmlinuz" "$out/img/"
	mkdir -p "$out/nomod"
	row "path vmlinuz without --modules" "000-tun|000-vhost|003" "warning: " "XDG_CACHE_HOME=$out/nomod" \
		--kernel "$out/img/$(basename "$vmlinuz")" ./suites/tun ./suites/vhost ./suites/qdisc
fi

[ -z "$tree" ] && exit 0

# The kernel's faults, through LKDTM, for seed 000-tun.
cfg=$PWD/scripts/faults/lkdtm.config
"$x" kernels build --base defconfig --tree "$tree" --config "$cfg" --name lkdtm >/dev/null || exit 2
for f in none warn-test warn-skip warn-between warn-teardown warn-after panic hang lost no-tun; do
	export XMITCHECK_FAULT=$f
	"$x" run --kernel build:lkdtm --idle-timeout 30s --expect 000-tun ./vmtest/testdata/faults >"$out/run" 2>&1
	rc=$?
	"$x" bisect --tree "$tree" --config "$cfg" -C "$PWD" --idle-timeout 30s --expect 000-tun \
		./vmtest/testdata/faults >"$out/bisect" 2>&1
	brc=$?
	printf '| %s | %s | %s | %s |\n' "$f" "$(verdicts 000-tun "$out/run")" "$rc" "$brc"
	cp "$out/run" "/tmp/faults-$f.run.log"
	cp "$out/bisect" "/tmp/faults-$f.bisect.log"
done
unset XMITCHECK_FAULT

# Environment and usage faults of bisect, and a cancelled step.
"$x" bisect --tree "$tree" --apply /nonexistent.patch -C "$PWD" ./vmtest/testdata/faults >"$out/b" 2>&1
printf '| bisect --apply missing | - | - | %s |\n' "$?"
# The step hangs in a test (LKDTM's HUNG_TASK) until the signal comes.
XMITCHECK_FAULT=hang "$x" bisect --tree "$tree" --config "$cfg" -C "$PWD" --idle-timeout 5m \
	./vmtest/testdata/faults >"$out/b" 2>&1 &
pid=$!
sleep 40
kill -TERM "$pid"
wait "$pid"
printf '| SIGTERM during a bisect step | - | - | %s |\n' "$?"
