#!/usr/bin/env bash
# The collection in a LAVA job run by LAVA itself: installs the kselftest collection, writes the job
# for LAVA's qemu device type (xmitcheck lava job), renders the device dictionary with lava-server's
# own qemu device-type template and the job's context (as a LAVA server renders it for a job), runs
# the job with LAVA's dispatcher (lava-run, Debian's lava-dispatcher) under TCG, and reads its log
# back into the verdict table, an HTML report and a KCIDB file (docs/kselftest.md).
#
#   scripts/lava.sh [KERNEL [OUT]]    KERNEL: what --kernel takes (default debian:7.3); OUT: lava-out
#
# XMITCHECK_TREE=DIR takes an installed collection instead of installing one. Needs root (lava-run)
# and `make deps DEPS=lava`. lava-run, the heavy step, runs under nice -n 19.
set -euo pipefail
kernel=${1:-debian:7.3}
out=$(realpath -m "${2:-lava-out}")
cd "$(dirname "$0")/.."
command -v lava-run >/dev/null || { echo "lava.sh: lava-run not found: make deps DEPS=lava" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "lava.sh: lava-run needs root: run it as root" >&2; exit 2; }
[ -x ./xmitcheck ] || make build
mkdir -p "$out"

# lava-server's device-type templates, from the package of lava-dispatcher's version, unpacked into
# the cache (the package is not installed: only its templates are needed to render a device).
version=$(dpkg-query -W -f='${Version}' lava-dispatcher)
templates=${XDG_CACHE_HOME:-$HOME/.cache}/xmitcheck/lava-server-$version/device-types
if [ ! -f "$templates/qemu.jinja2" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get download -q "lava-server=$version" >/dev/null)
	dpkg-deb -x "$tmp"/lava-server_*.deb "$tmp/x"
	mkdir -p "$(dirname "$templates")"
	cp -r "$tmp/x/usr/share/lava-server/device-types" "$templates"
fi

t0=$(date +%s)
tree=${XMITCHECK_TREE:-$out/kselftest}
[ -n "${XMITCHECK_TREE:-}" ] || ./xmitcheck suites install -o "$tree"
./xmitcheck lava job --kernel "$kernel" --tree "$tree" -o "$out/job"
python3 - "$out/job" "$templates" "$out/device.yaml" <<'EOF'
import sys, yaml, jinja2
job_dir, templates, device = sys.argv[1:]
context = yaml.safe_load(open(job_dir + "/job.yaml")).get("context", {})
env = jinja2.Environment(loader=jinja2.FileSystemLoader([job_dir, templates]), trim_blocks=True, autoescape=False)
open(device, "w").write(env.get_template("device.jinja2").render(**context))
EOF
t1=$(date +%s)
rc=0
# lava-run writes the job's log, one YAML entry a line, on stderr.
nice -n 19 lava-run --job-id "xmitcheck-$t1" --output-dir "$out/run" --device "$out/device.yaml" \
	"$out/job/job.yaml" >"$out/lava.log" 2>&1 || rc=$?
t2=$(date +%s)
echo "lava.sh: lava-run exited $rc after $((t2 - t1)) s; the job's log is $out/lava.log"
grep -h '"lvl": "results"' "$out/lava.log" | grep -E '"definition": "lava", "result"|"case": "job"' | tail -2 || true
./xmitcheck lava results "$out/lava.log" -o "$out/results"
./xmitcheck report -o "$out/report.html" --kcidb "$out/kcidb.json" "$out/results" >/dev/null
echo "lava.sh: $out/report.html, $out/kcidb.json; install and job $((t1 - t0)) s, lava-run $((t2 - t1)) s"
exit "$rc"
