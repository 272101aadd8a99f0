#!/bin/sh
# Runs an installed xmitcheck kselftest collection with the kernel's own runner and reports every
# test case and every seed's verdict: through LAVA's lava-test-case inside a LAVA job (the words
# LAVA's results cannot hold through lava-test-event), as "RESULT NAME" lines outside one
# (docs/kselftest.md).
#
#   xmitcheck-kselftest.sh [TREE]    TREE: where run_kselftest.sh is (default /opt/kselftest)
#
# Each test program of the collection writes its results for this script into $XMITCHECK_RESULTS
# (SUITE.results, internal/host/ksft/lab.go). Exit 0 once everything is reported, 2 without a tree.
set -u
tree=${1:-/opt/kselftest}
if [ ! -x "$tree/run_kselftest.sh" ]; then
	echo "xmitcheck-kselftest: no $tree/run_kselftest.sh: install the collection there (xmitcheck suites install -o $tree)" >&2
	exit 2
fi
results=$(mktemp -d)
export XMITCHECK_RESULTS="$results"

# The kernel's runner, as netdev's CI and KernelCI call it; its KTAP goes to the console (LAVA's log).
"$tree/run_kselftest.sh" -c xmitcheck 2>&1 | tee "$results/kselftest.log"

if command -v lava-test-case >/dev/null 2>&1; then
	result() {
		if [ -n "${3:-}" ]; then
			lava-test-case "$2" --result "$1" --measurement "$3" --units seconds
		else
			lava-test-case "$2" --result "$1"
		fi
	}
	event() { lava-test-event "$(echo "$*" | tr -d '<>')"; }
	set_start() { lava-test-set start "$1"; }
	set_stop() { lava-test-set stop; }
else
	result() { echo "$1 $2"; }
	event() { echo "event $*"; }
	set_start() { :; }
	set_stop() { :; }
fi

# The runner's own result per suite: "ok 1 selftests: xmitcheck: tun # SKIP".
awk '/^(not )?ok [0-9]+ selftests: xmitcheck: / {
	r = ($1 == "ok") ? "pass" : "fail"
	if ($0 ~ / # SKIP/) r = "skip"
	sub(/.*selftests: xmitcheck: /, "")
	print r, $1
}' "$results/kselftest.log" | while read -r r name; do result "$r" "$name"; done

for f in "$results"/*.results; do
	[ -e "$f" ] || continue
	suite=$(basename "$f" .results)
	while read -r kind name r secs status rest; do
		case $kind in
		kernel) event "xmitcheck-kernel $name $r $secs $status $rest" ;;
		case)
			result "$r" "$name" "$secs"
			[ "$status" = pass ] || event "xmitcheck-case $name $status $rest"
			;;
		error)
			event "xmitcheck-error $suite $name $r $secs $status $rest"
			result fail "$suite.run"
			;;
		esac
	done <"$f"
done
set_start verdicts
for f in "$results"/*.results; do
	[ -e "$f" ] || continue
	while read -r kind name r rest; do
		case $kind in
		verdict)
			event "xmitcheck-verdict $name $rest"
			result "$r" "$name"
			;;
		miss)
			event "xmitcheck-miss $name $rest"
			result "$r" "feature.$name"
			;;
		esac
	done <"$f"
done
set_stop
rm -rf "$results"
exit 0
