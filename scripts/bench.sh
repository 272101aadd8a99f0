#!/usr/bin/env bash
# Writes docs/speed.md from measurements, never by hand: boot-to-first-test
# on each backend (xmitcheck bench boot), every suite on one kernel
# (xmitcheck run, in two VMs at once and in one) and where its tests' time
# went (xmitcheck bench profile over the one VM's events), with the date,
# the machine and its load. With BENCH_TREE=DIR it also times a first
# `xmitcheck kernels build --tree DIR`, in an empty cache, a one-file
# rebuild, and a bisect step: that rebuild, then ./suites/qdisc on it;
# then a bad one: a one-file rebuild that breaks seed 003, and the same.
# With BENCH_MATRIX=1 it times the default matrix (every catalog kernel
# and the host, fetched first, untimed); with BENCH_COST=1 the cost pass
# on KERNEL (run --cost alone, docs/cost.md), with the table it printed.
#   scripts/bench.sh [OUT]     (make bench; KERNEL=debian:7.3 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/speed.md}
kernel=${KERNEL:-debian:7.3}
x=./xmitcheck
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

load() { cut -d' ' -f1-3 /proc/loadavg; }
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
{
	echo "# Speed"
	echo
	echo "Written by \`make bench\` (scripts/bench.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'), commit"
	echo "$(git rev-parse --short HEAD), on $(nproc) CPUs ($cpu), $(free -g | awk '/^Mem:/ {print $2}') GiB;"
	echo "load average at the start $(load). Do not edit: run \`make bench\` again."
	echo
	echo "## Boot to first test"
	echo
	echo "\`$x bench boot --kernel $kernel --all-backends -n 5\`: qemu's start to the first test binary's"
	echo "start (native: xmitcheck as PID 1; vng: virtme-ng), 5 boots each."
	echo
	echo '```'
	"$x" bench boot --kernel "$kernel" --all-backends -n 5
	echo '```'
	echo
	echo "## Every suite"
	echo
	echo "\`$x run --kernel $kernel ./suites/...\` with \`--vms 2\`, the test binaries dealt among two VMs"
	echo "at once, then with \`--vms 1\`, one VM (load at the start $(load)): when each test binary ended, the"
	echo "runner's notes (a binary the emulator killed runs again, and its time counts twice), the run's line"
	echo "and the wall-clock time of the whole command. Run's default is one VM per --cpus cores (usage.md)."
	echo
	echo '```'
	for vms in 2 1; do
		rc=0
		start=$(date +%s)
		"$x" run --kernel "$kernel" --vms "$vms" --events "$tmp/run$vms.events" ./suites/... \
			>"$tmp/run.out" 2>"$tmp/run.err" || rc=$?
		took=$(( $(date +%s) - start ))
		grep -E '^xmitcheck: running ' "$tmp/run.err" | sed 's/^xmitcheck: //' || true
		grep -E '^xmitcheck: .*: suites/[a-z]+ .*\(exit [0-9]+\) at ' "$tmp/run.err" | sed 's/^xmitcheck: /  /' || true
		grep -E '^xmitcheck: .*(TCG|emulator|booting again)' "$tmp/run.out" "$tmp/run.err" -h | sed 's/^xmitcheck: //' || true
		grep -E '^[^ ].*: [0-9]+ passed, ' "$tmp/run.out" || true
		echo "wall: $took s (exit $rc)"
		[ "$rc" = 0 ] || echo "The run exited $rc: its figures are not a healthy kernel's."
		echo
	done
	echo '```'
	echo
	echo "## Where the suites' time goes"
	echo
	echo "\`$x bench profile --from EVENTS\` over the \`--vms 1\` run's events (\`run --events\`): per suite and"
	echo "test, the longest first, the seconds the shared helpers spent in setup (namespaces, links, taps, BPF"
	echo "objects), traffic, waits (bounded polls), teardown (the cleanups), and other (the rest);"
	echo "a test's row holds its subtests' (internal/guest/profile)."
	echo
	echo '```'
	"$x" bench profile --from "$tmp/run1.events" || echo "bench profile failed"
	echo '```'
	if [ -n "${BENCH_TREE:-}" ]; then
		# A first build is measured in a cache of its own (no ccache
		# objects, no work tree), then a one-file rebuild: the same tree
		# with scripts/patches/tun-no-second-look.patch, one line less.
		cache="$tmp/xdg"
		echo
		echo "## Kernel build"
		echo
		echo "\`$x kernels build --tree $BENCH_TREE\` in an empty cache (default base; load at the start $(load)),"
		echo "then the same tree with \`--apply scripts/patches/tun-no-second-look.patch\`, one file changed,"
		echo "then a bisect step's test: \`$x run --kernel build:bench-one-file ./suites/qdisc\` on that build,"
		echo "and a bad bisect step: the one-file build of \`--apply scripts/patches/qdisc-inverted-fast-path.patch\`"
		echo "(seed 003 broken) and the same test on it (wall-clock seconds, each step; make's own time in brackets):"
		echo
		# Go's build cache stays the machine's: the step times the
		# kernel, not a first compile of the suites. So does the KVM
		# probe's verdict for this boot (vmtest/accel.go), which a
		# bisection's cache holds after its first step.
		export GOCACHE="$(go env GOCACHE)"
		mkdir -p "$cache/xmitcheck/vmtest"
		cp "${XDG_CACHE_HOME:-$HOME/.cache}"/xmitcheck/vmtest/kvm-verdict-* "$cache/xmitcheck/vmtest/" 2>/dev/null || true
		# build STEP [PATCH]: builds BENCH_TREE (with PATCH applied) as
		# build:bench-STEP, prints its times and sets took.
		build() {
			local apply=()
			[ -z "${2:-}" ] || apply=(--apply "$2")
			start=$(date +%s)
			XDG_CACHE_HOME="$cache" "$x" kernels build --tree "$BENCH_TREE" "${apply[@]}" --name "bench-$1" \
				>"$tmp/build.out" 2>&1
			took=$(( $(date +%s) - start ))
			echo "    $1 build: $took s ($(sed -n 's/.*built in \([0-9hms.]*\).*/\1/p' "$tmp/build.out")," \
				"load at the end $(load))"
		}
		# qdisc NAME: runs ./suites/qdisc on build:bench-NAME, prints its
		# time and exit code and sets took.
		qdisc() {
			start=$(date +%s)
			rc=0
			XDG_CACHE_HOME="$cache" "$x" run --kernel "build:bench-$1" ./suites/qdisc >"$tmp/qdisc.out" 2>&1 || rc=$?
			took=$(( $(date +%s) - start ))
			echo "    ./suites/qdisc on build:bench-$1: $took s (exit $rc)"
		}
		build first
		build one-file scripts/patches/tun-no-second-look.patch
		rebuild=$took
		qdisc one-file
		echo "    bisect step (one-file build + ./suites/qdisc): $(( rebuild + took )) s"
		build bad scripts/patches/qdisc-inverted-fast-path.patch
		rebuild=$took
		qdisc bad
		echo "    bad bisect step (one-file build + ./suites/qdisc, seed 003 broken): $(( rebuild + took )) s"
	fi
	if [ -n "${BENCH_COST:-}" ]; then
		echo
		echo "## The cost pass"
		echo
		echo "\`$x run --kernel $kernel -run '^\$' --cost ./suites/...\` (the cost benchmarks alone, default rounds"
		echo "and frames; load at the start $(load)): the pass's own line, the table, and the whole command's"
		echo "wall-clock time. Its figures are this machine's (docs/cost.md), no kernel's."
		echo
		echo '```'
		start=$(date +%s)
		rc=0
		"$x" run --kernel "$kernel" -run '^$' --cost ./suites/... >"$tmp/cost.out" 2>"$tmp/cost.err" || rc=$?
		took=$(( $(date +%s) - start ))
		grep -E '^xmitcheck: cost pass on .* rows in ' "$tmp/cost.out" | sed 's/^xmitcheck: //' || true
		sed -n '/^cost on /,$p' "$tmp/cost.out"
		echo "wall: $took s (exit $rc; a run with -run '^\$' judges no seed, so the verdicts make it 1)"
		echo '```'
	fi
	if [ -n "${BENCH_MATRIX:-}" ]; then
		"$x" kernels fetch $("$x" matrix -h 2>&1 | sed -n 's/.*(default: \(debian:[^)]*\) host).*/\1/p') \
			>"$tmp/fetch.out" 2>&1
		echo
		echo "## The default matrix"
		echo
		echo "\`$x matrix --check\` (every catalog kernel and the host, kernels fetched beforehand; load at the"
		echo "start $(load)): seconds from the start at which each kernel was done, then the whole run."
		echo
		echo '```'
		start=$(date +%s)
		rc=0
		# Each line of the run, stamped with the seconds since its start.
		"$x" matrix --check --out "$tmp/matrix" 2>&1 |
			while IFS= read -r line; do echo "$(( $(date +%s) - start )) s: $line"; done >"$tmp/matrix.out" || rc=$?
		took=$(( $(date +%s) - start ))
		grep -E '^[0-9]+ s: xmitcheck: .* done: ' "$tmp/matrix.out" | sed 's/xmitcheck: //' || true
		echo "matrix: $took s (exit $rc)"
		echo '```'
	fi
} >"$tmp/speed.md"
mv "$tmp/speed.md" "$out"
echo "bench: wrote $out"
