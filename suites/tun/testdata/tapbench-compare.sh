#!/bin/sh
# tapbench-compare.sh: BenchmarkTap's Go senders against the C reference,
# tapbench.c (64 frames per sendmmsg from one buffer), on the running kernel,
# interleaved. Each round runs, for 1 and 2 sending threads, the C program
# and then the benchmark, each on a stock tap (flag off, the default qdisc,
# txqueuelen 500) for about SECS seconds, both in one network namespace made
# for the comparison. It prints every run, then per thread count the medians
# and the ratios Go/C of frames sent per second, frames received per second
# and frames sent per CPU-second of the whole process.
#
#   usage (root, from the repository's top): suites/tun/testdata/tapbench-compare.sh TAPBENCH.c [ROUNDS [SECS]]
#
# It needs gcc, go, ip and /usr/bin/time (Debian: time), compiles
# TAPBENCH.c and the suite into a temporary directory, and removes it and
# the namespace when it ends.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 TAPBENCH.c [ROUNDS [SECS]]" >&2; exit 2; }
src=$1 rounds=${2:-10} secs=${3:-5}
tmp=$(mktemp -d)
ns=xmitcheck-tapbench-$$
trap 'ip netns del "$ns" 2>/dev/null || true; rm -rf "$tmp"' EXIT
gcc -O2 -pthread -o "$tmp/tapbench" "$src"
CGO_ENABLED=0 go test -c -o "$tmp/tun.test" ./suites/tun
ip netns add "$ns"

echo "kernel $(uname -r), $(nproc) CPUs, $rounds rounds of ${secs}s per run, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "round threads impl sent_pps recv_pps sent_per_cpu_s"
for round in $(seq 1 "$rounds"); do
	for threads in 1 2; do
		/usr/bin/time -f '%U %S' -o "$tmp/cpu" ip netns exec "$ns" "$tmp/tapbench" "$threads" "$secs" 500 0 >"$tmp/c.out"
		awk -v r="$round" -v t="$threads" -v cpu="$(cat "$tmp/cpu")" '
			{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
			END { split(cpu, c, " "); printf "%d %d C %.0f %.0f %.0f\n", r, t, v["sent"]*1e6, v["received"]*1e6, v["sent"]*1e6*v["secs"]/(c[1]+c[2]) }' "$tmp/c.out"
		ip netns exec "$ns" "$tmp/tun.test" -test.run '^$' -test.bench "^BenchmarkTap\$/^threads=$threads\$/^side=A\$" \
			-test.benchtime "${secs}s" >"$tmp/go.out"
		awk -v r="$round" -v t="$threads" '
			/^BenchmarkTap\// { for (i = 2; i <= NF; i++) v[$i] = $(i-1) }
			END { printf "%d %d Go %.0f %.0f %.0f\n", r, t, v["tx-pps"], v["rx-pps"], v["tx/cpu_s"] }' "$tmp/go.out"
	done
done | tee "$tmp/runs"

echo
echo "threads metric C_median Go_median Go/C(medians) Go/C(per round: median min max)"
awk '
	function median(a, n,   i, j, x) {
		for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j+1] = a[j]; a[j+1] = x }
		return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
	}
	NR > 0 { val[$1, $2, $3, 1] = $4; val[$1, $2, $3, 2] = $5; val[$1, $2, $3, 3] = $6; if ($1 > rounds) rounds = $1 }
	END {
		split("sent_pps recv_pps sent_per_cpu_s", name, " ")
		for (t = 1; t <= 2; t++) for (m = 1; m <= 3; m++) {
			min = 1e18; max = 0
			for (r = 1; r <= rounds; r++) {
				c[r] = val[r, t, "C", m]; g[r] = val[r, t, "Go", m]; q[r] = g[r] / c[r]
				if (q[r] < min) min = q[r]; if (q[r] > max) max = q[r]
			}
			mc = median(c, rounds); mg = median(g, rounds)
			printf "%d %s %.0f %.0f %.2f %.2f %.2f %.2f\n", t, name[m], mc, mg, mg / mc, median(q, rounds), min, max
		}
	}' "$tmp/runs"
