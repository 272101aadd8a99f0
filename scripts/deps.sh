#!/usr/bin/env bash
# Installs what xmitcheck needs on a Debian machine (run as root): qemu,
# kmod (depmod), virtme-ng (from Debian trixie, through a private apt state
# so the system's sources are never touched), clang/llvm/libbpf headers (so
# `make check` can prove the committed BPF objects match their C), what
# `xmitcheck kernels build` needs to build a kernel tree (gcc, make, flex,
# bison, bc, libelf, libssl, pahole, ccache, patch), Chromium (the
# report's browser test) and the Go modules.
# Idempotent: what is there already is not installed again.
set -euo pipefail

need_pkgs=()
for p in qemu-system-x86 kmod busybox-static udev file python3-argcomplete python3-requests python3-pkg-resources clang llvm libbpf-dev linux-libc-dev \
	gcc make flex bison bc libelf-dev libssl-dev dwarves ccache patch xz-utils chromium; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need_pkgs+=("$p")
done
if [ "$(id -u)" != 0 ] && { [ ${#need_pkgs[@]} -gt 0 ] || ! command -v vng >/dev/null; }; then
	echo "deps: installing ${need_pkgs[*]:-virtme-ng} needs root: run 'sudo $0'" >&2
	exit 2
fi
export DEBIAN_FRONTEND=noninteractive
if [ ${#need_pkgs[@]} -gt 0 ]; then
	echo "deps: installing ${need_pkgs[*]}"
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

if ! command -v vng >/dev/null; then
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
echo "deps: ready (qemu $(qemu-system-x86_64 --version | head -1 | awk '{print $4}'), vng $(vng --version 2>/dev/null | awk '{print $NF}'))"
