#!/bin/bash
# Install what sluice needs from Debian's packages, and only what is missing.
#
#   scripts/setup.sh          what building and the demo need
#   scripts/setup.sh --demo   that, plus what the live demo runs
#   scripts/setup.sh --test   that, plus the compilers and peers the tests use,
#                             and the Node SDKs of tests/integration/node (npm ci,
#                             when its node_modules is missing or older than its lock)
#
# Needs root (or sudo) only when a package is missing.
set -euo pipefail

build_pkgs=(
	gcc libc6-dev meson ninja-build pkg-config
	libyaml-dev libidn2-dev libuv1-dev libc-ares-dev libssl-dev
	libnftnl-dev libmnl-dev libseccomp-dev node-llhttp
	scdoc # the man page, build/sluice.1
)
# The live demo builds a small world of network namespaces.
demo_pkgs=(iproute2 python3 dnsmasq-base curl util-linux openssl ca-certificates)
test_pkgs=(
	libcmocka-dev clang libclang-rt-14-dev python3 gdb
	iproute2 nftables util-linux bubblewrap procps strace # strace: test-teardown delays a syscall
	curl dnsmasq-base openssl ca-certificates bind9-dnsutils nodejs
	bsdutils systemd # script(1) gives a test a terminal; systemd-analyze checks the units
	man-db groff-base git # man -l renders the man page; git clones through the recipes
	python3-prometheus-client # test-metrics.sh parses the scrape with Prometheus' own parser
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

# apt-get install, as root or through sudo.
apt_install() {
	local sudo=
	echo "setup: installing $*"
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null; then
			sudo=sudo
		else
			echo "setup: these packages are missing and I am not root: $*" >&2
			exit 1
		fi
	fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
[ "${1:-}" = --test ] || exit 0

# The openai and Anthropic SDKs that tests/integration/test-inspect.sh runs
# inside the sandbox, at the versions its package-lock.json pins. Node.js
# from elsewhere (NodeSource's package, say) brings its own npm; Debian's
# nodejs does not.
command -v npm >/dev/null || apt_install npm
node_dir=$(cd "$(dirname "$0")/.." && pwd)/tests/integration/node
stamp=$node_dir/node_modules/.package-lock.json # npm writes it at every install
if [ -L "$node_dir/node_modules" ]; then
	# A link to another checkout's (a git worktree's, say): npm ci would
	# empty that one through the link. Its owner keeps it up to date.
	echo "setup: $node_dir/node_modules is a link: not touched"
elif [ ! -e "$stamp" ] || [ "$node_dir/package-lock.json" -nt "$stamp" ] ||
	[ "$node_dir/package.json" -nt "$stamp" ]; then
	echo "setup: npm ci in tests/integration/node"
	if (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
		# The sandbox's user (not root) runs them.
		chmod -R a+rX "$node_dir/node_modules"
	else
		# Not fatal: every other test can still run; test-inspect.sh
		# says what is missing.
		echo "setup: npm ci failed in $node_dir: test-inspect.sh will fail" >&2
	fi
fi
