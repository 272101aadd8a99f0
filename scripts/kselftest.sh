#!/usr/bin/env bash
# The collection run the way netdev's CI runs kselftests (docs/kselftest.md): installed once, then the
# kernel's own runner in virtme-ng on each kernel (vng --run VMLINUZ --exec run_kselftest.sh), and on
# the running kernel; each output parsed by the kernel's own kunit.py, and each suite's verdicts listed.
#
#   scripts/kselftest.sh [KERNEL...]    default: debian:7.3 debian:6.12, then the running kernel
#
# KSELFTEST_DIR: where to install (default ~/.cache/xmitcheck/kselftest: vng's guests see the host's
# root, not its /tmp); KSELFTEST_OUT: the logs (default kselftest-out); KSELFTEST_HOST=0 skips the
# running kernel; XMITCHECK_VNG_KVM=1 lets vng use KVM. Needs root. The VMs run under nice -n 19, one
# at a time. Exit 1 when a runner reported a failure or kunit.py found one.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- debian:7.3 debian:6.12
cache=${XDG_CACHE_HOME:-$HOME/.cache}/xmitcheck
dir=${KSELFTEST_DIR:-$cache/kselftest}
out=$(realpath -m "${KSELFTEST_OUT:-kselftest-out}")
kunit=$cache/kernels/kselftest-runner/debian-7.3/tools/testing/kunit/kunit.py
[ "$(id -u)" = 0 ] || { echo "kselftest.sh: the suites need root: run it as root" >&2; exit 2; }
command -v vng >/dev/null || { echo "kselftest.sh: vng not found: make deps DEPS=vng" >&2; exit 2; }
[ -x ./xmitcheck ] || make build
mkdir -p "$out"
kvm=--disable-kvm
[ "${XMITCHECK_VNG_KVM:-0}" = 1 ] && kvm=

t=$(date +%s)
./xmitcheck suites install -o "$dir"
echo "kselftest.sh: installed in $(($(date +%s) - t)) s"
rc=0
report() { # NAME LOG SECONDS
	echo "== $1: run_kselftest.sh in $3 s"
	grep -E '^(not )?ok [0-9]+ selftests: ' "$2" || true
	# Each suite's verdict lines, the KTAP's "# SEED: state (want …): why" of its verdicts block.
	awk '/^# selftests: / { suite = $NF } /^# +# [0-9][0-9][0-9][-a-z]*: / { sub(/^# +# /, ""); print "   " suite " " $0 }' "$2"
	if [ -f "$kunit" ]; then
		python3 "$kunit" parse "$2" | tail -1 || rc=1
	fi
}
for k in "$@"; do
	vmlinuz=$(./xmitcheck kernels fetch "$k" | cut -f3)
	t=$(date +%s)
	# --verbose: the kernel's console in the log too, where a crash or a hang shows, as netdev's CI
	# keeps it beside the runner's KTAP (kunit.py reads past its lines).
	nice -n 19 vng --run "$vmlinuz" $kvm --user root --cpus 2 --memory 1024M --verbose \
		--exec "$dir/run_kselftest.sh -c xmitcheck" 2>&1 | tee "$out/$k.log" || rc=1
	report "$k" "$out/$k.log" $(($(date +%s) - t))
done
if [ "${KSELFTEST_HOST:-1}" != 0 ]; then
	t=$(date +%s)
	nice -n 19 "$dir/run_kselftest.sh" -c xmitcheck 2>&1 | tee "$out/host.log" || rc=1
	report "host ($(uname -r))" "$out/host.log" $(($(date +%s) - t))
fi
exit "$rc"
