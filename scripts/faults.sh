#!/usr/bin/env bash
# The fault table: each fault made to happen in a real VM, with the verdict
# of seed 000-tun and the exit codes of `run` and `bisect` for it. The
# kernel faults need a kernel with LKDTM, built once (half an hour on 2
# cores the first time) from a tree such as Debian's linux-source-7.3, on
# the defconfig base the table was proven on:
#   scripts/faults.sh TREE          (e.g. /work/src/linux-source-7.3)
set -uo pipefail
cd "$(dirname "$0")/.."
tree=${1:?usage: scripts/faults.sh KERNEL-TREE}
x=./xmitcheck
go build -o "$x" ./cmd/xmitcheck || exit 2
cfg=$PWD/scripts/faults/lkdtm.config
"$x" kernels build --base defconfig --tree "$tree" --config "$cfg" --name lkdtm >/dev/null || exit 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

printf '| fault | 000-tun verdict | run exit | bisect exit |\n| --- | --- | --- | --- |\n'
for f in none warn-test warn-skip warn-between warn-teardown warn-after panic hang lost no-tun; do
	export XMITCHECK_FAULT=$f
	"$x" run --kernel build:lkdtm --idle-timeout 30s --expect 000-tun ./vmtest/testdata/faults >"$out/run" 2>&1
	rc=$?
	verdict=$(grep -oE '000-tun +(present|absent|BROKEN|error)' "$out/run" | head -1 | awk '{print $2}')
	"$x" bisect --tree "$tree" --config "$cfg" -C "$PWD" --idle-timeout 30s --expect 000-tun \
		./vmtest/testdata/faults >"$out/bisect" 2>&1
	brc=$?
	printf '| %s | %s | %s | %s |\n' "$f" "${verdict:-?}" "$rc" "$brc"
	cp "$out/run" "/tmp/faults-$f.run.log"
	cp "$out/bisect" "/tmp/faults-$f.bisect.log"
done
unset XMITCHECK_FAULT

# A modular kernel given as a path without its modules: tun, vhost-net and
# the qdiscs cannot load.
vmlinuz=$(ls "${XDG_CACHE_HOME:-$HOME/.cache}"/xmitcheck/kernels/debian-7.3/boot/vmlinuz-* 2>/dev/null | head -1)
if [ -n "$vmlinuz" ]; then
	"$x" run --kernel "$vmlinuz" ./suites/tun ./suites/vhost ./suites/qdisc >"$out/run" 2>&1
	rc=$?
	v=$(grep -oE '(000-tun|000-vhost|003) +(present|absent|BROKEN|error)' "$out/run" | awk '{print $1"="$2}' | xargs)
	printf '| path vmlinuz without --modules | %s | %s | - |\n' "$v" "$rc"
	cp "$out/run" /tmp/faults-nomodules.run.log
fi

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
