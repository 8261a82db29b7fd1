#!/bin/bash
# Install what sluice needs from Debian's packages, and only what is missing.
#
#   scripts/setup.sh          what building and the demo need
#   scripts/setup.sh --demo   that, plus what the live demo runs
#   scripts/setup.sh --test   that, plus the compilers and peers the tests use
#
# Needs root (or sudo) only when something is missing.
set -euo pipefail

build_pkgs=(
	gcc libc6-dev meson ninja-build pkg-config
	libyaml-dev libidn2-dev libuv1-dev libc-ares-dev libssl-dev
	libnftnl-dev libmnl-dev node-llhttp
)
# The live demo builds a small world of network namespaces.
demo_pkgs=(iproute2 python3 dnsmasq-base curl util-linux)
test_pkgs=(
	libcmocka-dev clang libclang-rt-14-dev python3
	iproute2 nftables util-linux bubblewrap procps
	curl dnsmasq-base openssl ca-certificates bind9-dnsutils
)

pkgs=("${build_pkgs[@]}")
case "${1:-}" in
--test) pkgs+=("${demo_pkgs[@]}" "${test_pkgs[@]}") ;;
--demo) pkgs+=("${demo_pkgs[@]}") ;;
"") ;;
*)
	echo "usage: $0 [--demo|--test]" >&2
	exit 2
	;;
esac

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		SUDO=sudo
	else
		echo "setup: these packages are missing and I am not root: ${missing[*]}" >&2
		exit 1
	fi
else
	SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
