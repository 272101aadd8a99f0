#!/usr/bin/env bash
# Installs what xmitcheck needs on a Debian machine (run as root), by what
# it is for; no argument means all:
#   vm       boot kernels in qemu (qemu and its qboot firmware, kmod for
#            depmod, xz)
#   vng      the virtme-ng backend (from Debian trixie, through a private
#            apt state: the system's sources are never touched)
#   bpf      regenerate and check the BPF objects (clang, llvm, libbpf headers)
#   browser  the report's browser test (Chromium)
#   kbuild   `xmitcheck kernels build` (gcc, make, flex, bison, bc, libelf,
#            libssl, pahole, ccache, patch)
#   lava     scripts/lava.sh: LAVA's dispatcher (lava-run, Debian's
#            lava-dispatcher, about 140 packages with libguestfs: not in the
#            default set) and a static busybox for the job's ramdisk
# and the Go modules. Idempotent: what is there already is not installed
# again.
set -euo pipefail

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(vm vng bpf browser kbuild)
pkgs=()
for g in "${groups[@]}"; do
	case "$g" in
	vm) pkgs+=(qemu-system-x86 qemu-system-data kmod xz-utils file) ;;
	vng) pkgs+=(qemu-system-x86 qemu-system-data kmod busybox-static udev file python3-argcomplete python3-requests python3-pkg-resources) ;;
	bpf) pkgs+=(clang llvm libbpf-dev linux-libc-dev) ;;
	browser) pkgs+=(chromium) ;;
	kbuild) pkgs+=(gcc make flex bison bc libelf-dev libssl-dev dwarves ccache patch xz-utils) ;;
	lava) pkgs+=(lava-dispatcher busybox-static qemu-system-x86 python3-jinja2 python3-yaml) ;;
	*) echo "deps: unknown group $g: use vm, vng, bpf, browser, kbuild or lava" >&2; exit 2 ;;
	esac
done
need_vng=false
[[ " ${groups[*]} " == *" vng "* ]] && ! command -v vng >/dev/null && need_vng=true

need_pkgs=()
for p in $(printf '%s\n' "${pkgs[@]}" | sort -u); do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need_pkgs+=("$p")
done
if [ "$(id -u)" != 0 ] && { [ ${#need_pkgs[@]} -gt 0 ] || $need_vng; }; then
	echo "deps: installing ${need_pkgs[*]:-virtme-ng} needs root: run 'sudo $0 ${groups[*]}'" >&2
	exit 2
fi
export DEBIAN_FRONTEND=noninteractive
if [ ${#need_pkgs[@]} -gt 0 ]; then
	echo "deps: installing ${need_pkgs[*]}"
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

if $need_vng; then
	# virtme-ng is not in Debian 12; trixie's package (Architecture: all)
	# installs with Debian 12's dependencies.
	src=/etc/apt/sources.list.d/debian.sources
	uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' "$src")
	[ -n "$uri" ] || { echo "deps: no Debian mirror URI in $src" >&2; exit 2; }
	d=$(mktemp -d)
	trap 'rm -rf "$d"' EXIT
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri trixie main" >"$d/sources.list"
	apt_opts=(-o "Dir::Etc::SourceList=$d/sources.list" -o Dir::Etc::SourceParts=/dev/null -o APT::Sandbox::User=root
		-o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache")
	echo "deps: installing virtme-ng from trixie"
	apt-get "${apt_opts[@]}" update -qq
	(cd "$d" && apt-get "${apt_opts[@]}" download virtme-ng >/dev/null)
	apt-get install -y -qq --no-install-recommends "$d"/virtme-ng_*.deb >/dev/null
fi

cd "$(dirname "$0")/.."
go mod download
echo "deps: ready (${groups[*]})"
