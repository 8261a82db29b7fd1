#!/bin/bash
# The libraries sluice loads only when it needs them (OpenSSL,
# cli/openssl-shim.h; libidn2, policy/host.c) are not among those the
# dynamic linker maps at every start: an OpenSSL call added without its
# stub (openssl.syms) links libssl again, silently, and every `sluice run`
# pays for it. And what needs one still finds it: `sluice check` of a
# policy that names a host in Unicode (libidn2, loaded then).
#   test-lazy-libraries.sh SLUICE
set -uo pipefail
sluice=$1
n=0
bad=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $1"; }

needed=$(readelf -d "$sluice" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
libs="libidn2 libunistring"
# The OpenSSL stubs are written for x86_64 only; elsewhere it is linked.
[ "$(uname -m)" = x86_64 ] && libs="libssl libcrypto $libs"
for lib in $libs; do
	if grep -q "^$lib\." <<<"$needed"; then
		notok "$lib is not loaded at start (it is NEEDED: $(echo $needed))"
	else
		ok "$lib is not loaded at start"
	fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'version: 1\nallow:\n  - host: bücher.test\n' >"$tmp/idn.yaml"
chmod 644 "$tmp/idn.yaml"
out=$("$sluice" check "$tmp/idn.yaml" 2>&1)
case "$out" in
*xn--bcher-kva.test*) ok "a policy that names a host in Unicode is read (libidn2 loaded then)" ;;
*) notok "sluice check of a host in Unicode: $out" ;;
esac
echo "1..$n"
[ "$bad" = 0 ]
