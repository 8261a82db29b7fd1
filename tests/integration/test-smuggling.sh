#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Request framing through `sluice gateway`: raw bytes from a client, a
# raw-bytes origin (lib/raw-origin.py) that logs every byte it receives and
# reads requests as leniently as a careless origin would. The gateway must
# refuse every body it could frame otherwise than some origin (each refusal
# audited), send the origin only the body bytes it parsed, framed by itself,
# keep a head's deadline from its first byte (slowloris), keep every byte of
# a first read larger than the head limit, and close after an early answer
# rather than read the rest of the body as the next request. Plain HTTP
# through the proxy, and inside an inspected TLS connection.
#
# Usage: test-smuggling.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-smuggling.sh ip nft nsenter python3 dnsmasq openssl ss

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
R=$T/raw # the raw origin's logs
mkdir -m 777 "$R"
mkdir -m 700 "$T/ca"

cat >"$T/dnsmasq.conf" <<CONF
no-resolv
no-hosts
listen-address=$N
bind-interfaces
address=/raw.test/$N
log-queries
log-facility=$T/dns.log
CONF
world_bg "$WORLD_NET" dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=raw.test \
	-addext subjectAltName=DNS:raw.test -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
world_bg "$WORLD_NET" "$PY" "$here/lib/raw-origin.py" "$R" "$N" 80:full 81:early 82:chunky 443:full:tls \
	444:early:tls 445:ntlm:tls 446:full:tls --cert "$T/cert.pem" --key "$T/key.pem"
wait_for_file "$R/ready" || { echo "not ok - the raw origin did not start"; exit 1; }

# Ports 443 to 446 name methods: inspected (TLS ended at the gateway).
cat >"$T/policy.yaml" <<'P'
version: 1
allow:
  - host: raw.test
    ports: [80, 81, 82]
  - host: raw.test
    ports: [443, 444, 445, 446]
    methods: [GET, POST]
P
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen 203.0.113.1:3128 --resolver "$N:53" --audit "$T/audit.log" --sandbox test \
	--upstream-ca "$T/cert.pem" --ca-dir "$T/ca" --header-timeout 1000 --max-header-bytes 4096 \
	--idle-timeout 5000 || exit 1

conv() { world_host env RAWCONV_CA="$T/ca/ca-bundle.crt" "$PY" "$here/lib/rawconv.py" 203.0.113.1 3128 "$@" 2>&1; }
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
# Requests the raw origin read, and the bytes it received, across every
# connection so far.
seen() { grep -c -- "$1" "$R/requests.log"; }
# How often BYTES (Python escapes) occur in them.
bytes_have() {
	"$PY" -c 'import glob, sys
p = sys.argv[1].encode("latin1").decode("unicode_escape").encode("latin1")
print(sum(open(f, "rb").read().count(p) for f in glob.glob(sys.argv[2] + "/conn-*.bin")))' "$1" "$R"
}

H=$'POST http://raw.test/up HTTP/1.1\\r\\nHost: raw.test\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n'
HT=$'POST /up HTTP/1.1\\r\\nHost: raw.test\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n'
SM='GET http://raw.test/smuggled HTTP/1.1\r\nHost: raw.test\r\n\r\n'
SMT='GET /smuggled HTTP/1.1\r\nHost: raw.test\r\n\r\n'

# ---- a chunked body, re-framed ----
out=$(conv "send:${H}0005\\r\\nhello\\r\\n6\\r\\n world\\r\\n0\\r\\n\\r\\n" read)
check "a chunked POST reaches the origin whole" "200 raw-origin ok $(sha 'hello world')" "$out"
check "... framed by the gateway, not by the client (no '0005' size line)" "0 1" \
	"$(bytes_have 0005) $(bytes_have '5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n')"

# ---- chunked shapes that frame a body two ways: 400, audited ----
# Each hides a request after the body; the lenient origin would read it
# if the client's bytes reached it.
n=0
body_shape() {
	local name=$1 body=$2 path=$3 out r
	n=$((n + 1))
	out=$(conv "send:${H}${body}${SM}" read rest)
	check "$name: refused with 400, then closed" "400 sluice: bad framing in the request body" \
		"$(cut -d: -f1-2 <<<"${out%% | *}")"
	r=$(audit_last)
	check_has "... audited as bad-framing" '"reason":"bad-framing"' "$r"
	check_has "... for the request that carried it" "\"path\":\"$path\"" "$r"
}
body_shape "bare CR after a chunk size" '5\rhello\r\n0\r\n\r\n' /up
body_shape "bare CR, then any byte, after a chunk size" '5\rXhello\r\n0\r\n\r\n' /up
body_shape "bare LF after a chunk size" '5\nhello\r\n0\r\n\r\n' /up
body_shape "a chunk extension" '5;a=b\r\nhello\r\n0\r\n\r\n' /up
body_shape "whitespace after a chunk size" '5 \r\nhello\r\n0\r\n\r\n' /up
body_shape "two other bytes for the CRLF after chunk data" '5\r\nhelloXX0\r\n\r\n' /up
body_shape "a bare LF after chunk data" '5\r\nhello\n0\r\n\r\n' /up
body_shape "a negative chunk size" '-5\r\nhello\r\n0\r\n\r\n' /up
body_shape "a chunk size past 64 bits" '10000000000000000\r\nhello\r\n0\r\n\r\n' /up
body_shape "trailer fields" '5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n' /up
body_shape "a bare LF ending the body" '5\r\nhello\r\n0\r\n\n' /up

# ---- heads that frame a body two ways: refused before anything is sent ----
head_shape() {
	local name=$1 head=$2 want=$3 out
	out=$(conv "send:${head}5\\r\\nhello\\r\\n0\\r\\n\\r\\n${SM}" read)
	check "$name: refused with $want" "$want" "${out%% *}"
	check_has "... audited" '"decision":"deny"' "$(audit_last)"
}
P1='POST http://raw.test/h HTTP/1.1\r\nHost: raw.test\r\n'
head_shape "Content-Length and Transfer-Encoding" "${P1}Content-Length: 3\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n" 400
head_shape "Transfer-Encoding: chunked, identity" "${P1}Transfer-Encoding: chunked, identity\\r\\n\\r\\n" 400
head_shape "Transfer-Encoding: xchunked" "${P1}Transfer-Encoding: xchunked\\r\\n\\r\\n" 501
head_shape "Transfer-Encoding twice" "${P1}Transfer-Encoding: chunked\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n" 400
head_shape "obs-fold of Transfer-Encoding" "${P1}Transfer-Encoding:\\r\\n chunked\\r\\n\\r\\n" 400
head_shape "bare LF line ends in the head" 'POST http://raw.test/h HTTP/1.1\nHost: raw.test\nTransfer-Encoding: chunked\n\n' 400
head_shape "two Content-Lengths that differ" "${P1}Content-Length: 5\\r\\nContent-Length: 50\\r\\n\\r\\n" 400
head_shape "Transfer-Encoding in HTTP/1.0" 'POST http://raw.test/h HTTP/1.0\r\nHost: raw.test\r\nTransfer-Encoding: chunked\r\n\r\n' 400
check "no refused head reached the origin" "0" "$(seen ' /h ')"

# ---- slowloris on a kept-alive connection ----
out=$(conv 'send:GET http://raw.test/first HTTP/1.1\r\nHost: raw.test\r\n\r\n' read \
	'drip:GET http://raw.test/slow HTTP/1.1\r\nHost: raw.test\r\nX-Pad: aaaaaaaaaaaaaaaa\r\n\r\n:100' \
	read rest)
check "a head dripped after a first exchange: 408 at the head deadline, closed" \
	"200 raw-origin ok $(sha '') | 408 sluice: timed out waiting for the request head | closed" "$out"
check_has "... audited as header-timeout" '"reason":"header-timeout"' "$(audit_last)"
check "... the dripped request never reached the origin" "0" "$(seen /slow)"

# ---- a first read larger than the head limit ----
out=$(conv big:60000 read)
want=${out%% | *}
check "head and 60000-byte body in one write: every body byte reaches the origin" \
	"200 raw-origin ok $want" "${out#* | }"
check "... the origin read it once, whole" "1" "$(seen "POST /big body=60000 sha256=$want")"
out=$(conv 'big:60000:GET http://raw.test/before HTTP/1.1\r\nHost: raw.test\r\n\r\n' read read)
want=${out%% | *}
check "the same pipelined after a GET in one write: both answered, the body whole" \
	"200 raw-origin ok $(sha '') | 200 raw-origin ok $want" "${out#* | }"

# ---- an early answer, with the body unread ----
# The body holds what would be a request if read as one.
E='GET http://raw.test:81/smuggled-early HTTP/1.1\r\nHost: raw.test:81\r\n\r\n'
len=$(($(printf "$E" | wc -c) + 5))
out=$(conv "send:POST http://raw.test:81/early HTTP/1.1\\r\\nHost: raw.test:81\\r\\nContent-Length: $len\\r\\n\\r\\nhello" \
	read "send:$E" rest)
check "an early 403 from the origin, then the rest of the body: closed" "403 early | closed" "$out"
r=$(audit_last)
check_has "... its one audit record" '"path":"/early","status":403' "$r"
check "... no record and no origin request for what the body held" "0 0" \
	"$(grep -c smuggled-early "$T/audit.log") $(seen smuggled-early)"

# ---- inside an inspected connection ----
out=$(conv tls:raw.test:443 "send:${HT}0005\\r\\nhello\\r\\n6\\r\\n world\\r\\n0\\r\\n\\r\\n" read)
check "inspected: a chunked POST reaches the origin whole" "200 raw-origin ok $(sha 'hello world')" "$out"
check "... framed by the gateway (no '0005' size line)" "0" "$(bytes_have 0005)"
for shape in '5\rXhello\r\n0\r\n\r\n' '5\r\nhelloXX0\r\n\r\n' '5;a\r\nhello\r\n0\r\n\r\n' \
	'5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n'; do
	out=$(conv tls:raw.test:443 "send:${HT}${shape}${SMT}" read)
	check "inspected: $shape: refused with 400" "400" "${out%% *}"
	check_has "... audited as bad-framing" '"reason":"bad-framing"' "$(audit_last)"
done
out=$(conv tls:raw.test:443 big:60000 read)
want=${out%% | *}
check "inspected: a 60000-byte body in one write reaches the origin whole" \
	"200 raw-origin ok $want" "${out#* | }"
E2='GET /smuggled-early HTTP/1.1\r\nHost: raw.test:444\r\n\r\n'
len=$(($(printf "$E2" | wc -c) + 5))
out=$(conv tls:raw.test:444 "send:POST /early HTTP/1.1\\r\\nHost: raw.test:444\\r\\nContent-Length: $len\\r\\n\\r\\nhello" \
	read "send:$E2" rest)
check "inspected: an early 403, then the rest of the body: closed" "403 early | closed" "$out"

# ---- responses are framed by the gateway too ----
out=$(conv 'send:GET http://raw.test:82/r HTTP/1.1\r\nHost: raw.test:82\r\n\r\n' raw)
check "a chunked response reaches the client framed by the gateway (no extension, no trailer)" \
	'5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n' "$out"

# ---- a login bound to the connection: its connection serves no one else ----
# (test-http-pool shows the same for plain HTTP.)
tget() { world_host curl -s -m 10 --cacert "$T/ca/ca-bundle.crt" -x http://203.0.113.1:3128 "$@"; }
conn_of() { grep -- "$1" "$R/requests.log" | tail -1 | sed -n 's/^conn=\([0-9]*\) .*/\1/p'; }
differ() { [ -n "$(conn_of "$1")" ] && [ -n "$(conn_of "$2")" ] && [ "$(conn_of "$1")" != "$(conn_of "$2")" ] && echo yes; }
tget -H 'Authorization: Negotiate YIIB' https://raw.test:446/n1 >/dev/null
tget https://raw.test:446/n2 >/dev/null
check "inspected: after a Negotiate login, the next client gets a connection of its own" "yes" \
	"$(differ ' /n1 ' ' /n2 ')"
tget -H 'Authorization: Bearer x' https://raw.test:446/n3 >/dev/null
tget https://raw.test:446/n4 >/dev/null
check "... while a Bearer one leaves it to the pool" "$(conn_of ' /n3 ')" "$(conn_of ' /n4 ')"
tget https://raw.test:445/w1 >/dev/null
tget https://raw.test:445/w2 >/dev/null
check "inspected: after an answer that asks for NTLM, the next client gets a connection of its own" \
	"yes" "$(differ ' /w1 ' ' /w2 ')"

# ---- what the origin saw, in all ----
check "no smuggled request reached the origin, on any connection" "0 0" \
	"$(seen smuggled) $(bytes_have smuggled)"
check "none of the client's refused framing bytes reached it" "0 0 0" \
	"$(bytes_have 'helloXX') $(bytes_have ';a') $(bytes_have 'X-T:')"
check "the gateway is still serving" "200 raw-origin ok $(sha '')" \
	"$(conv 'send:GET http://raw.test/last HTTP/1.1\r\nHost: raw.test\r\n\r\n' read)"

finish
