#!/bin/bash
# SPDX-License-Identifier: MIT
#
# TLS inspection and credential injection, with real clients inside
# `sluice run`: the openai and @anthropic-ai/sdk packages from npm, unchanged
# (default base URL, key from the usual variable, which holds sluice's
# placeholder), curl and python through the proxy variables (CONNECT), and
# Node's own fetch and WebSocket (captured). The keys are made afresh for
# each run; the origin (lib/origin.py) checks them and logs only whether a
# request carried the right one (auth=real|wrong|none). Then every place
# the sandbox can read is searched for them.
#
# Usage: test-inspect.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
# shellcheck source-path=SCRIPTDIR
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-inspect.sh ip nft nsenter python3 curl dnsmasq openssl node
if ! [ -e "$here/node/node_modules/openai/package.json" ] ||
	! [ -e "$here/node/node_modules/@anthropic-ai/sdk/package.json" ]; then
	echo "not ok - the Node SDKs are not installed: run scripts/setup.sh --test"
	exit 1
fi

. "$here/world.sh"
# The sandbox's user runs these: not root's pyenv shim.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR

# The keys: new for every run, in files only root can read; the origin
# reads the same files (ORIGIN_*_KEY_FILE). See make_keys in lib/checks.sh.
make_keys "$T/secrets" || { echo "not ok - could not make the keys"; exit 1; }

mkdir -m 1777 "$T/flags" "$T/work"
ORIGIN_OPENAI_KEY_FILE=$T/secrets/openai.key ORIGIN_ANTHROPIC_KEY_FILE=$T/secrets/anthropic.key \
	ORIGIN_FLAG_DIR=$T/flags \
	world_services api.openai.com="$N" api.anthropic.com="$N" plain.test="$N" other.test="$N" ||
	{ echo "not ok - services"; exit 1; }
chmod 644 "$T/cert.pem"

cat >"$T/policy.yaml" <<P
version: 1
secrets:
  openai: { file: $T/secrets/openai.key }
  anthropic: { file: $T/secrets/anthropic.key }
allow:
  - host: api.openai.com
    inject: { header: Authorization, prefix: "Bearer ", secret: openai, placeholder_env: OPENAI_API_KEY }
  - host: api.anthropic.com
    methods: [POST]
    paths: ["/v1/messages", "/v1/messages/*"]
    inject: { header: x-api-key, secret: anthropic, placeholder_env: ANTHROPIC_API_KEY }
  - host: plain.test
    methods: [GET]
  - host: other.test
  - host: sub.plain.test
    methods: [GET]
P
chmod 644 "$T/policy.yaml"

# The CA variables are sluice's: nothing here points a client at the
# origin's certificate, except for other.test, which is passed through.
run() {
	world_host "$SLUICE" run --ro "$T" --rw "$T/work" --rw "$T/flags" --policy "$T/policy.yaml" \
		--resolver "$N:53" --upstream-ca "$T/cert.pem" --audit "$T/audit.log" \
		-- env HOME="$T/work" "$@"
}
# The origin's log lines for a path (its query too), counted.
origin_count() { grep -c -- "^[A-Z]* $1 host=" "$T/origin.log"; }

# The Node modules must be readable by the sandbox's user; where the
# checkout is not (a private home), a copy is.
NODE_DIR=$here/node
if ! world_host "$SLUICE" run --ro "$T" -- test -r "$NODE_DIR/node_modules/openai/package.json" 2>/dev/null; then
	cp -r "$here/node" "$T/node" && chmod -R a+rX "$T/node"
	NODE_DIR=$T/node
fi

cat >"$T/ssegate.py" <<'PY'
# ssegate.py URL FLAGFILE: the origin's /sse-gate read with urllib (which
# honours HTTPS_PROXY: a CONNECT tunnel). After event 1, and only then,
# makes FLAGFILE, which releases event 2.
import sys, urllib.request
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=25)
    got = b""
    for _ in range(20):
        line = r.readline()
        got += line
        if not line or b"data: event 1" in got:
            break
    if b"data: event 1" not in got:
        print("sse-gate error: no event 1 in", got)
        sys.exit(1)
    print("sse-gate: event 1")
    open(sys.argv[2], "w").close()
    rest = r.read()
    print("sse-gate: event 2" if b"data: event 2" in rest else "sse-gate: no event 2 in %r" % rest)
except Exception as e:
    print("sse-gate error:", type(e).__name__, getattr(e, "code", ""), e)
    sys.exit(1)
PY
cat >"$T/wsclient.py" <<'PY'
# wsclient.py URL MESSAGE: a websocket over TLS, through the CONNECT proxy
# that HTTPS_PROXY names (directly without it), verified against the
# default trust (SSL_CERT_FILE). Sends MESSAGE after the 101, prints
# "ws echo: REPLY"; "ws error: ..." and exit 1 otherwise.
import base64, hashlib, os, socket, ssl, struct, sys
from urllib.parse import urlsplit

def fail(why):
    print("ws error:", why)
    sys.exit(1)

def head(sock):
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        b = sock.recv(1)  # byte by byte: nothing past the head is consumed
        if not b:
            fail("closed during the head: %r" % data)
        data += b
    return data.decode("latin-1")

def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        b = sock.recv(n - len(data))
        if not b:
            fail("closed after %r" % data)
        data += b
    return data

def frame(op, payload):
    mask = os.urandom(4)
    return bytes([0x80 | op, 0x80 | len(payload)]) + mask + \
        bytes(c ^ mask[i % 4] for i, c in enumerate(payload))

u = urlsplit(sys.argv[1])
msg = sys.argv[2].encode()
host, port = u.hostname, u.port or 443
proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
try:
    if proxy:
        p = urlsplit(proxy)
        s = socket.create_connection((p.hostname, p.port or 80), timeout=15)
        s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
                  % (host.encode(), port, host.encode(), port))
        h = head(s)
        if h.split(" ")[1] != "200":
            fail("CONNECT: " + h.splitlines()[0])
    else:
        s = socket.create_connection((host, port), timeout=15)
    s = ssl.create_default_context().wrap_socket(s, server_hostname=host)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
               % (u.path or "/", host, key)).encode())
    h = head(s)
    want = base64.b64encode(hashlib.sha1(
        (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    if h.split(" ")[1] != "101":
        fail("handshake: " + h.splitlines()[0])
    if ("\nsec-websocket-accept: " + want.lower()) not in h.lower():
        fail("wrong Sec-WebSocket-Accept in " + repr(h))
    s.sendall(frame(1, msg))
    b0, b1 = recv_exact(s, 2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", recv_exact(s, 2))[0]
    print("ws echo:", recv_exact(s, n).decode())
    s.sendall(frame(8, b"\x03\xe8"))
except (OSError, ValueError, IndexError) as e:
    fail("%s: %s" % (type(e).__name__, e))
PY
chmod 644 "$T/ssegate.py" "$T/wsclient.py"

# ---- the SDKs, unchanged: captured (Node ignores the proxy variables) ----
out=$(run node "$NODE_DIR/openai.mjs" 2>&1; echo "exit $?")
check "the openai SDK, with its defaults, through capture and inspection" \
	"$(printf '%s\n' "openai nonstream: hello from the test origin" \
		"openai stream: hello from the test origin" "openai stream chunks: 7 finish: stop" \
		"exit 0")" "$out"
check_nokey "... and nothing it printed holds a key" "$out"
check "... the origin got the real key, on both calls" "2 2" \
	"$(grep -c '^POST /v1/chat/completions host=api.openai.com auth=real$' "$T/origin.log") $(origin_count /v1/chat/completions)"
all_out=$out

out=$(run node "$NODE_DIR/anthropic.mjs" 2>&1; echo "exit $?")
check "the @anthropic-ai/sdk, with its defaults, through capture and inspection" \
	"$(printf '%s\n' "anthropic nonstream: hello from the test origin" \
		"anthropic stream: hello from the test origin" \
		"anthropic stream events: 10 final: hello from the test origin stop: end_turn" \
		"exit 0")" "$out"
check_nokey "... and nothing it printed holds a key" "$out"
check "... the origin got the real key, on both calls" "2 2" \
	"$(grep -c '^POST /v1/messages host=api.anthropic.com auth=real$' "$T/origin.log") $(origin_count /v1/messages)"
all_out+=$out

check "the audit names the openai credential for each inspected call" "2" \
	"$(audit_count '"event":"http"' '"method":"POST"' '"path":"/v1/chat/completions"' \
		'"status":200' '"decision":"allow"' '"tls":"inspect"' '"credential":"openai"')"
check "the audit names the anthropic credential for each inspected call" "2" \
	"$(audit_count '"event":"http"' '"method":"POST"' '"path":"/v1/messages"' \
		'"status":200' '"decision":"allow"' '"tls":"inspect"' '"credential":"anthropic"')"

# ---- what the sandbox has: placeholders and the CA, never a key ----
out=$(run sh -c 'env; echo "--- unreadable:"
	for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE NODE_EXTRA_CA_CERTS \
		GIT_SSL_CAINFO PIP_CERT AWS_CA_BUNDLE DENO_CERT; do
		eval "f=\${$v:-}"; [ -n "$f" ] && [ -r "$f" ] && grep -q "BEGIN CERTIFICATE" "$f" || echo "$v"
	done' 2>&1)
check_nokey "the sandbox's environment holds no key" "$out"
placeholder() { sed -n "s/^$1=//p" <<<"$out"; }
p=$(placeholder OPENAI_API_KEY)
check "OPENAI_API_KEY is a placeholder ($p)" "yes" \
	"$([ -n "$p" ] && [ "$p" != "$openai_key" ] && echo yes)"
p=$(placeholder ANTHROPIC_API_KEY)
check "ANTHROPIC_API_KEY is a placeholder ($p)" "yes" \
	"$([ -n "$p" ] && [ "$p" != "$anthropic_key" ] && echo yes)"
check "every CA variable names a readable certificate bundle" "" "$(sed -n '/^--- unreadable:$/,$p' <<<"$out" | tail -n +2)"
all_out+=$out

# ---- curl through the proxy (CONNECT): the header replaced, the echo scrubbed ----
for path in /echo-headers /echo-headers-chunked; do
	out=$(run curl -sS -m 10 -H "Authorization: Bearer wrong" "https://api.openai.com$path" 2>&1)
	check "curl (CONNECT) to api.openai.com$path: the origin got the real key, not the agent's" \
		"GET $path host=api.openai.com auth=real" "$(grep "^GET $path " "$T/origin.log" | tail -n 1)"
	check_nokey "... the echo the sandbox got holds no key" "$out"
	check "... nor what the agent sent" "0" "$(grep -c wrong <<<"$out")"
	auth=$(grep -i '^authorization: ' <<<"$out")
	want="Authorization: Bearer $openai_key"
	check "... one Authorization header came back, scrubbed to the key's length" "1 ${#want}" \
		"$(grep -ci '^authorization: ' <<<"$out") ${#auth}"
	check_has "... and the rest of the echo is intact" "Host: api.openai.com" "$out"
	all_out+=$out
done
check_has "... audited as inspected, with the credential" '"tls":"inspect"' \
	"$(audit_match '"path":"/echo-headers-chunked"' '"credential":"openai"' '"status":200')"
out=$(run curl -sS -m 10 -H "Authorization: Bearer wrong" -w '%{num_connects}\n' \
	"https://api.openai.com/echo-headers?ka=1" "https://api.openai.com/echo-headers?ka=2" 2>&1)
check "two requests on one kept-alive tunnel to api.openai.com: each gets the real key" \
	"2 1 0" "$(grep -c '^GET /echo-headers?ka=[12] host=api.openai.com auth=real$' "$T/origin.log") $(grep -x '[0-9]' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
check_nokey "... and neither echo holds it" "$out"
check "... nor what the agent sent" "0" "$(grep -c wrong <<<"$out")"
all_out+=$out

out=$(run curl -sS -m 10 https://plain.test/echo-headers 2>&1)
check "an inspected host without inject (plain.test): no credential reached it" \
	"GET /echo-headers host=plain.test auth=none" \
	"$(grep '^GET /echo-headers host=plain.test ' "$T/origin.log" | tail -n 1)"
check "... nor came back" "0" "$(grep -ci '^authorization:' <<<"$out")"
check_nokey "... and nothing it printed holds a key" "$out"
check_has "... audited as inspected, without a credential" '"credential":null' \
	"$(audit_match '"host":"plain.test"' '"path":"/echo-headers"' '"tls":"inspect"')"
all_out+=$out

# ---- decisions inside the tunnel ----
out=$(run curl -sS -m 10 -o /dev/null -w '%{http_code}' -X POST -d '{}' \
	https://api.anthropic.com/v1/other 2>&1)
check "a path the rule does not name gets 403 inside the tunnel" "403" "$out"
check_has "... audited: deny, reason path, tls inspect" '"status":403' \
	"$(audit_match '"path":"/v1/other"' '"decision":"deny"' '"reason":"path"' '"tls":"inspect"')"
check "... and the origin never saw it" "0" "$(origin_count /v1/other)"
out=$(run curl -sS -m 10 -o /dev/null -w '%{http_code}' --path-as-is -X POST -d '{}' \
	https://api.anthropic.com/v1/messages/../other2 2>&1)
check "... nor in dot segments after a path it names" "0 403" "$(origin_count /v1/other2) $out"
out=$(run curl -sS -m 10 -o /dev/null -w '%{http_code}' https://api.anthropic.com/v1/messages 2>&1)
check "a method the rule does not name (GET) gets 403" "403" "$out"
check_has "... audited with reason method" '"decision":"deny"' \
	"$(audit_match '"method":"GET"' '"path":"/v1/messages"' '"reason":"method"' '"tls":"inspect"')"
out=$(run curl -sS -m 10 -i https://api.anthropic.com/v1/messages 2>&1 | tr -d '\r')
check "... its answer says why where a client that shows only '403' still carries it" \
	"X-Sluice-Reason: method" "$(grep -i '^x-sluice-reason:' <<<"$out")"

out=$(run curl -sS -m 10 -o /dev/null -w '%{http_code} %{num_connects}\n' https://plain.test/ka1 \
	--next -X POST -d x -o /dev/null -w '%{http_code} %{num_connects}\n' https://plain.test/ka2 2>&1)
check "two requests on one kept-alive tunnel are each decided: GET 200, then POST 403" \
	"$(printf '200 1\n403 0')" "$out"
check "... the origin saw the first only" "1 0" "$(origin_count /ka1) $(origin_count /ka2)"
check_has "... the second is audited with reason method" '"decision":"deny"' \
	"$(audit_match '"method":"POST"' '"path":"/ka2"' '"reason":"method"')"

out=$(run curl -sS -m 10 -o /dev/null -w '%{http_code}' -H "Host: plain.test" \
	https://api.openai.com/mismatch1 2>&1)
check "Host plain.test inside a tunnel to api.openai.com is refused (4xx)" "4" "${out:0:1}"
out=$(run curl -sS -m 10 -o /dev/null -w '%{http_code}' -H "Host: api.openai.com" \
	https://plain.test/mismatch2 2>&1)
check "Host api.openai.com inside a tunnel to plain.test is refused (4xx)" "4" "${out:0:1}"
check "... the origin saw neither" "0 0" "$(origin_count /mismatch1) $(origin_count /mismatch2)"
check "... both audited as a host mismatch" "2" \
	"$(audit_count '"decision":"deny"' '"reason":"host-mismatch"' '/mismatch')"

out=$(run sh -c 'curl -sS -m 10 -o /dev/null -w "%{http_code}" -x "$HTTP_PROXY" -d "{}" \
	"http://api.openai.com/v1/chat/completions?plain=proxy"' 2>&1)
check "plain HTTP to the credential host through the proxy is refused (a key only goes over TLS)" \
	"403" "$out"
out=$(run curl -sS -m 10 -o /dev/null -w '%{http_code}' --noproxy '*' -d '{}' \
	"http://api.openai.com/v1/chat/completions?plain=capture" 2>&1)
check "... and through capture" "403" "$out"
check "... the origin saw neither" "0" "$(grep -c 'plain=' "$T/origin.log")"
check "... both audited, with the reason" "2" "$(audit_count '"host":"api.openai.com"' '"port":80' \
	'"decision":"deny"' '"reason":"credential-needs-tls"')"

# ---- streaming is not buffered; websockets pass ----
out=$(run "$PY" "$T/ssegate.py" "https://plain.test/sse-gate?flag=py" "$T/flags/py" 2>&1; echo "exit $?")
check "server-sent events through CONNECT and inspection: event 1 came before event 2 was sent" \
	"$(printf 'sse-gate: event 1\nsse-gate: event 2\nexit 0')" "$out"
check "... the origin was released by the client's flag, not its timeout" "1" \
	"$(grep -c '^sse-gate released-by-flag flag=py$' "$T/origin.log")"
out=$(run node "$NODE_DIR/sse-gate.mjs" "https://plain.test/sse-gate?flag=node" "$T/flags/node" 2>&1; echo "exit $?")
check "server-sent events to Node's fetch, captured and inspected: the same" \
	"$(printf 'sse-gate: event 1\nsse-gate: event 2\nexit 0')" "$out"
check "... released by the flag" "1" "$(grep -c '^sse-gate released-by-flag flag=node$' "$T/origin.log")"

out=$(run "$PY" "$T/wsclient.py" wss://plain.test/ws "hello over CONNECT" 2>&1; echo "exit $?")
check "a websocket through CONNECT and inspection echoes a message sent after the 101" \
	"$(printf 'ws echo: hello over CONNECT\nexit 0')" "$out"
# Node has a WebSocket client from 20.10 on (behind this flag until 22).
if [ "$(node --no-warnings --experimental-websocket -e 'console.log(typeof WebSocket)' 2>&1)" = function ]; then
	out=$(run node --no-warnings --experimental-websocket "$NODE_DIR/ws.mjs" wss://plain.test/ws \
		"hello captured" 2>&1; echo "exit $?")
	check "... and Node's WebSocket, captured" "$(printf 'ws echo: hello captured\nexit 0')" "$out"
	check "... the origin echoed both" "2" "$(grep -c '^ws echoed=1$' "$T/origin.log")"
else
	ok "... and Node's WebSocket, captured # SKIP node $(node --version) has no WebSocket"
fi

# ---- a host whose rule needs no inspection stays a tunnel ----
out=$(run curl -sS -m 10 --cacert "$T/cert.pem" https://other.test/echo-headers 2>&1)
check_has "other.test (no methods, paths or inject) is passed through: the origin's own certificate reaches curl" \
	"Host: other.test" "$out"
check_has "... audited as passthrough" '"tls":"passthrough"' \
	"$(audit_match '"host":"other.test"' '"event":"connect"')"

# ---- heads written as tightly as HTTP allows, both ways ----
# "Name:v" grows to "Name: v" when a head is rebuilt: 90 of them in the
# agent's request (the origin takes no more than 100), 120 in the origin's
# response, must get through whole.
hdrs=$(for i in $(seq 90); do printf -- '-H X-%d:v ' "$i"; done)
# shellcheck disable=SC2086
out=$(run curl -sS -m 10 $hdrs https://plain.test/compact-headers 2>&1)
check "compact headers in the request and in the response" "compact" "$out"
# shellcheck disable=SC2086
out=$(run curl -sS -m 10 $hdrs -o /dev/null -w '%{http_code} %{num_headers}' https://plain.test/compact-headers 2>&1)
check "... the response's 120 headers and its Content-Length all reach the client" "200 121" "$out"

# ---- upstream: one kept-alive connection serves many; sessions resumed ----
: >"$T/origin.log.conns"
out=$(run sh -c 'for i in 1 2 3; do curl -sS -m 10 -o /dev/null -w "%{http_code} " https://plain.test/echo-headers?pool=$i; done' 2>&1)
check "three requests on three client connections" "200 200 200 " "$out"
check "... reached the origin over one upstream connection (pooled, kept alive)" "1" \
	"$(grep -c '^conn ' "$T/origin.log.conns")"
check "... the client side was three connections" "3" \
	"$(audit_match '"path":"/echo-headers?pool=' | grep -o '"client":"[^"]*"' | sort -u | grep -c .)"
: >"$T/origin.log.conns"
out=$(run sh -c 'curl -sS -m 10 https://plain.test/close && curl -sS -m 10 -o /dev/null -w "%{http_code}\n" https://plain.test/echo-headers?after-close' 2>&1)
check "an origin that closes after answering: the next request still works" "closed
200" "$out"
check "... over a new upstream connection that resumed the TLS session" \
	"conn resumed=0|conn resumed=1" \
	"$(sed 's/peer=[0-9]* //; s/ cipher=.*//' "$T/origin.log.conns" | paste -sd '|')"

# ---- the sandbox's leg: the fast suite by our preference ----
# The client puts AES-256-GCM first (as OpenSSL's clients do); the leg
# never leaves the host, so the gateway picks AES-128-GCM, cheaper for
# both ends. A client that allows only AES-256-GCM still gets it (the set
# is the system's, only reordered), and the origin's leg keeps the
# system's own offer (OpenSSL's default puts AES-256-GCM first): the two
# upstream connections just above show it.
sys_first=$(openssl ciphers -s -tls1_3 | cut -d: -f1)
check "the gateway's offer to the origin got the system's first choice" \
	"cipher=$sys_first|cipher=$sys_first" "$(grep -o 'cipher=.*' "$T/origin.log.conns" | paste -sd '|')"
out=$(run curl -sS -m 10 -v -o /dev/null --tls13-ciphers TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256 \
	https://plain.test/echo-headers?suite=1 2>&1)
check_has "a client preferring AES-256-GCM gets AES-128-GCM from the gateway" \
	"SSL connection using TLSv1.3 / TLS_AES_128_GCM_SHA256" "$out"
out=$(run curl -sS -m 10 -v -o /dev/null --tls13-ciphers TLS_AES_256_GCM_SHA384 \
	https://plain.test/echo-headers?suite=2 2>&1)
check_has "a client that allows only AES-256-GCM gets it" \
	"SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384" "$out"
out=$(run curl -sS -m 10 -v -o /dev/null --tls13-ciphers TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256 \
	https://plain.test/echo-headers?suite=3 2>&1)
check_has "a client that asks for ChaCha20 first (no AES instructions) gets it" \
	"SSL connection using TLSv1.3 / TLS_CHACHA20_POLY1305_SHA256" "$out"

# ---- the sandbox's leg: one session ticket, and it resumes ----
# A ticket costs the gateway a session's encoding and encryption; clients
# keep the last one they got (curl, Node's agents), so one is enough.
cat >"$T/resume.sh" <<'SH'
# resume.sh DIR: two TLS connections to plain.test through the proxy, the
# second offering the first one's session; prints the tickets the first
# got and whether the second was resumed.
p=${HTTPS_PROXY#http://}
p=${p%/}
get() {
	printf 'GET /echo-headers?resume HTTP/1.1\r\nHost: plain.test\r\nConnection: close\r\n\r\n' |
		timeout 10 openssl s_client -proxy "$p" -connect plain.test:443 -servername plain.test \
			-CAfile "$SSL_CERT_FILE" -verify_return_error -ign_eof "$@" 2>&1
}
get -sess_out "$1/sess" >"$1/first.txt"
echo "tickets=$(grep -c 'Post-Handshake New Session Ticket' "$1/first.txt")"
get -sess_in "$1/sess" | grep -E '^(Reused|New), '
SH
out=$(run sh "$T/resume.sh" "$T/work" 2>&1)
check "a TLS client of the gateway gets one session ticket, and resumes with it" \
	"tickets=1
Reused, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256" "$out"

# ---- a response cut off mid-key: the held-back bytes go nowhere ----
# The origin echoes the key but its last byte and ends the connection: the
# scrubber held those bytes back (they could still have become the key),
# and the gateway keeps an ended connection's scrubber for the next ones.
# Neither that response nor the next connections' may show them (curl
# --http0.9 prints whatever comes, even before a status line).
out=$(run sh -c 'curl -sS -m 10 https://api.openai.com/echo-auth-cut; echo
	for i in 1 2 3; do
		echo "=== after $i"
		curl --http0.9 -sS -m 10 "https://api.openai.com/echo-headers?after-cut=$i"
	done' 2>&1)
check "a response cut off mid-key: the origin got the real key" "1" \
	"$(grep -c '^GET /echo-auth-cut host=api.openai.com auth=real$' "$T/origin.log")"
check "... the sandbox saw none of the key's bytes, in it or in the next connections' echoes" \
	"0" "$(grep -c -- "${openai_key:0:10}" <<<"$out")"
check_has "... that response ended where the key began: 12 of its 4096 bytes came" \
	"transfer closed with 4084 bytes remaining" "$out"
check_has "... and they were 'auth=Bearer '" "auth=Bearer === after 1" "$(tr -d '\n' <<<"$out")"
for i in 1 2 3; do
	check_has "... and connection $i after it got its echo whole" "=== after $i
Host: api.openai.com" "$out"
done

# ---- nowhere the sandbox can look holds a key ----
# The keys go in on stdin (so they are in no file and no argument) and the
# sandbox's user searches: what the sandbox made, the world's directory
# (audit and origin logs; the secrets' directory is root's), /tmp, and its
# own environment.
out=$(printf '%s\n%s\n' "$openai_key" "$anthropic_key" | run sh -c '
	read -r a; read -r b; echo "patterns: ${#a} ${#b}"
	printf "%s\n%s\n" "$a" "$b" | grep -rlsF -D skip -f - /run/sluice "$0" /tmp /proc/self/environ' "$T" 2>&1)
check "a search by the sandbox's user over /run/sluice, $T, /tmp and its environment finds no key" \
	"patterns: ${#openai_key} ${#anthropic_key}" "$out"
check "... nor do its secret files' contents show: the sandbox cannot read them" "denied" \
	"$(run sh -c "cat '$T/secrets/openai.key' >/dev/null 2>&1 && echo read || echo denied")"
audit=$(cat "$T/audit.log")
check "the audit log holds records with tls inspect and credentials, and no key" "yes" \
	"$([ "$(audit_count '"tls":"inspect"')" -gt 10 ] && ! has_key "$audit" && echo yes)"
check_nokey "the origin's log holds no key" "$(cat "$T/origin.log")"
check_nokey "nothing the sandbox printed held a key" "$all_out"

# ---- the origin's certificate is verified ----
# Against the system's store (no --upstream-ca), the world's self-signed
# origin is not trusted: refused before any request, so no key goes.
n_before=$(wc -l <"$T/origin.log")
out=$(world_host "$SLUICE" run --ro "$T" --policy "$T/policy.yaml" --resolver "$N:53" --audit "$T/audit.log" \
	-- curl -sS -m 10 -w ' %{http_code}' https://api.openai.com/echo-headers?untrusted 2>&1)
check_has "an origin the system's store does not trust: 502, and why" \
	"the origin's certificate is not trusted" "$out"
check_has "... with status 502" " 502" "$out"
check "... and no request reached it" "$n_before" "$(wc -l <"$T/origin.log")"
check_has "... audited as upstream-tls-failed" '"reason":"upstream-tls-failed"' \
	"$(audit_match '"path":"/echo-headers?untrusted"')"
# A name the origin's certificate does not cover (sub.plain.test resolves
# to the origin, whose certificate names plain.test only).
out=$(run curl -sS -m 10 -w ' %{http_code}' https://sub.plain.test/echo-headers?wrong-name 2>&1)
check_has "an origin whose certificate does not name the host: 502" " 502" "$out"
check "... and no request reached it" "0" "$(origin_count '/echo-headers?wrong-name')"

# ---- a secret from sluice's own environment ----
# The key is in sluice's environment (root's: the sandbox's user cannot
# read it there), injected as from a file, and absent from the command's.
sed "s|openai: { file: $T/secrets/openai.key }|openai: { env: SLUICE_TEST_OPENAI }|" \
	"$T/policy.yaml" >"$T/env.yaml"
chmod 644 "$T/env.yaml"
n_real=$(grep -c '^GET /echo-headers?from-env host=api.openai.com auth=real$' "$T/origin.log")
out=$(SLUICE_TEST_OPENAI=$openai_key world_host "$SLUICE" run --ro "$T" --policy "$T/env.yaml" \
	--resolver "$N:53" --upstream-ca "$T/cert.pem" -- sh -c \
	'curl -sS -m 10 -o /dev/null -w "%{http_code}\n" https://api.openai.com/echo-headers?from-env
	printenv SLUICE_TEST_OPENAI || echo "not in the environment"' 2>&1)
check "an { env: NAME } secret is injected, and NAME is not in the command's environment" \
	"200
not in the environment" "$out"
check "... the origin got the real key" "$((n_real + 1))" \
	"$(grep -c '^GET /echo-headers?from-env host=api.openai.com auth=real$' "$T/origin.log")"
check_nokey "... and nothing the sandbox printed held it" "$out"
# sluice itself holds it (and the CA's key): the command's parent, whose
# memory and environment the sandbox's user must not read.
out=$(SLUICE_TEST_OPENAI=$openai_key world_host "$SLUICE" run --ro "$T" --policy "$T/env.yaml" \
	--resolver "$N:53" --upstream-ca "$T/cert.pem" -- sh -c \
	'p=$PPID; echo "parent: $(cat /proc/$p/comm)"
	for f in environ mem; do head -c 1 /proc/$p/$f >/dev/null 2>&1 && echo "$f: read" || echo "$f: refused"; done' 2>&1)
check "the sandbox cannot read sluice's environment or memory" "parent: sluice
environ: refused
mem: refused" "$out"

# ---- a client that offers only HTTP/2 ----
# Only HTTP/1.1 is inspected: a ClientHello that offers nothing else is
# refused in the handshake (no_application_protocol), never let through.
out=$(run sh -c 'openssl s_client -connect api.openai.com:443 -servername api.openai.com \
	-alpn h2 -CAfile "$SSL_CERT_FILE" </dev/null 2>&1' 2>&1)
check_has "a client offering only h2 is refused in the handshake" "no application protocol" "$out"

# ---- more secrets than the scrubber holds ----
{
	echo "version: 1"
	echo "secrets:"
	for i in 1 2 3 4 5 6 7 8 9; do echo "  k$i: { env: SLUICE_TEST_K$i }"; done
	echo "allow:"
	echo "  - host: plain.test"
} >"$T/nine.yaml"
chmod 644 "$T/nine.yaml"
out=$(world_host "$SLUICE" run --ro "$T" --policy "$T/nine.yaml" -- echo ran 2>&1)
rc=$?
check "nine secrets (the scrubber holds eight): sluice run exits 125 before the command" \
	"125" "$rc"
check_has "... and says the limit" "at most 8" "$out"

# ---- a secret file others can read stops sluice before the command ----
for mode in 644 640; do
	loose=$T/loose-$mode.key
	(umask 077; printf 'sk-loose-%s\n' "$(openssl rand -hex 16)" >"$loose")
	chmod "$mode" "$loose"
	sed "s|$T/secrets/openai.key|$loose|" "$T/policy.yaml" >"$T/loose.yaml"
	out=$(world_host "$SLUICE" run --ro "$T" --policy "$T/loose.yaml" --resolver "$N:53" \
		--upstream-ca "$T/cert.pem" -- echo ran 2>&1)
	rc=$?
	check "a secret file of mode $mode: sluice run exits 125 before the command" "125" "$rc"
	check_has "... naming the file" "$loose" "$out"
	rm -f "$loose"
done

check "the canary saw nothing from any of it" "0" "$(world_canary_count)"
finish
