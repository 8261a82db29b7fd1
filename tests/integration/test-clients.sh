#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Real clients, unchanged, inside `sluice run`: Python's urllib (honours the
# proxy variables), git clone over HTTPS, curl, and Node's built-in fetch
# (which ignores the proxy variables and so goes through the sandbox's DNS
# and transparent capture). Each allowed target works; each denied one
# fails fast, with its reason in the audit log.
#
# Usage: test-clients.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-clients.sh ip nft nsenter python3 curl dnsmasq openssl git node

. "$here/world.sh"

world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR

# A repository for `git clone` over dumb HTTPS.
mkdir -p "$T/www"
git init -q -b main "$T/src"
echo "hello from the test world" >"$T/src/README"
git -C "$T/src" add README
git -C "$T/src" -c user.name=t -c user.email=t@t commit -qm init
git clone -q --bare "$T/src" "$T/www/repo.git"
git -C "$T/www/repo.git" update-server-info
chmod -R a+rX "$T/www"
WORLD_ORIGIN_ROOT=$T/www world_services allowed.test=$N denied.test=$N ||
	{ echo "not ok - services"; exit 1; }
chmod 644 "$T/cert.pem"

cat >"$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
    ports: [80, 443]
P
chmod 644 "$T/policy.yaml"
mkdir -m 1777 "$T/work"

run() {
	world_host "$SLUICE" run --ro "$T" --rw "$T/work" --policy "$T/policy.yaml" --resolver "$N:53" \
		--audit "$T/audit.log" -- env SSL_CERT_FILE="$T/cert.pem" \
		GIT_SSL_CAINFO="$T/cert.pem" NODE_EXTRA_CA_CERTS="$T/cert.pem" \
		CURL_CA_BUNDLE="$T/cert.pem" HOME="$T/work" \
		"$@" 2>&1
}

py='import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().strip())
except Exception as e:
    print("error", getattr(e, "code", ""), type(e).__name__)'
check "python urllib, HTTPS through the proxy" "origin GET /py host=allowed.test body=0" \
	"$(run python3 -c "$py" https://allowed.test/py)"
check "python urllib, plain HTTP through the proxy" "origin GET /py-plain host=allowed.test body=0" \
	"$(run python3 -c "$py" http://allowed.test/py-plain)"
check "python urllib, a denied host fails with 403" "error 403 HTTPError" \
	"$(run python3 -c "$py" http://denied.test/x)"
check_has "... audited" '"host":"denied.test","port":80,"path":"/x","status":403,"decision":"deny"' \
	"$(audit_last)"

out=$(run sh -c "cd $T/work && git clone -q https://allowed.test/files/repo.git clone && cat clone/README")
check "git clone over HTTPS through the proxy" "hello from the test world" "$out"
out=$(run sh -c "cd $T/work && git clone -q https://denied.test/files/repo.git clone2 2>&1; echo rc=\$?")
check_has "git clone from a denied host fails" "rc=128" "$out"
check_has "... and says why" "403" "$out"

check "curl through the proxy" "origin GET /curl host=allowed.test body=0" \
	"$(run curl -sS -m 10 https://allowed.test/curl)"

node_js='fetch(process.argv[1]).then(r => r.text()).then(t => console.log(t.trim()),
  e => console.log("error", e.cause ? e.cause.code || e.cause.message : e.message))'
check "Node fetch (ignores the proxy variables): DNS and capture let it through" \
	"origin GET /node host=allowed.test body=0" \
	"$(run node -e "$node_js" https://allowed.test/node)"
check_has "... audited as a captured TLS connection" '"tls":"passthrough","sni":"allowed.test"' \
	"$(audit_last)"
out=$(run node -e "$node_js" https://denied.test/node)
check_has "Node fetch to a denied name fails: the name does not resolve" "error ENOTFOUND" "$out"

check "the canary saw nothing from any of it" "0" "$(world_canary_count)"
finish
