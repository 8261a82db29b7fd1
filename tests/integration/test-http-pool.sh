#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The plain-HTTP upstream pool of `sluice gateway` (gateway/conn-pool.c):
# a kept-alive origin connection serves later exchanges, from other client
# connections too, but only for the same decided host, port and address,
# only under the policy it was opened under, and never once its origin has
# said anything out of turn (bytes after a response's end, an answer nobody
# asked for, a body for a HEAD): such bytes must never be read as another
# request's answer. A pooled connection its origin closed under a request
# is retried once on a new one for an idempotent request, never for a POST.
# The audit log, written a batch per turn of the gateway's loop, still has
# one record per request under load, none lost at a rotation (SIGUSR1) or
# when the gateway stops with requests open.
# The evidence is the raw origin's log (lib/raw-origin.py), which numbers
# the connections that brought each request, and what the client got.
#
# Usage: test-http-pool.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-http-pool.sh ip nft nsenter python3 dnsmasq curl ss

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
R=$T/raw
mkdir -m 777 "$R"

cat >"$T/dnsmasq.conf" <<CONF
no-resolv
no-hosts
listen-address=$N
bind-interfaces
address=/raw.test/$N
address=/other.test/$N
address=/cl0.test/$N
log-queries
log-facility=$T/dns.log
CONF
world_bg "$WORLD_NET" dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=
world_bg "$WORLD_NET" "$PY" "$here/lib/raw-origin.py" "$R" "$N" 80:full 81:drop2 82:trail \
	83:chatty 84:headbody 85:hang 86:slow 87:cl0 88:barelf \
	89:full 90:ntlm
wait_for_file "$R/ready" || { echo "not ok - the raw origin did not start"; exit 1; }

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: raw.test
    ports: [80, 81, 82, 83, 84, 85, 86, 88, 89, 90]
  - host: other.test
    ports: [80]
  - host: cl0.test
    ports: [87]
    paths: ["/static/*", "/public/*"]
P
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen 203.0.113.1:3128 --resolver "$N:53" --audit "$T/audit.log" --sandbox test || exit 1
gw_pid=$world_gw_pid

# One client connection per call: STATUS BODY.
get() { world_host curl -s -m 10 -x http://203.0.113.1:3128 -o - -w ' %{http_code}' "$@" 2>&1; }
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
OK="raw-origin ok $(sha '') 200"
# The origin's connection number for the newest request line matching $1.
conn_of() { grep -- "$1" "$R/requests.log" | tail -1 | sed -n 's/^conn=\([0-9]*\) .*/\1/p'; }
seen() { grep -c -- "$1" "$R/requests.log"; }
reload() { gw_reload "$gw_pid" "$T/gw.log"; } # SIGHUP, then its answer in gw.log

# ---- reuse, across client connections ----
check "a first request" "$OK" "$(get http://raw.test/a1)"
check "a second, on another client connection" "$OK" "$(get http://raw.test/a2)"
a1=$(conn_of ' /a1 ')
check "... reached the origin on the first one's upstream connection (pooled)" "$a1" \
	"$(conn_of ' /a2 ')"
check "... each audited on its own" "1 1" \
	"$(audit_count '"path":"/a1"' '"decision":"allow"') $(audit_count '"path":"/a2"' '"decision":"allow"')"

# ---- only for the same decided host ----
check "another name for the same address" "$OK" "$(get http://other.test/b1)"
check "... does not get raw.test's connection" "yes" \
	"$([ "$(conn_of ' /b1 ')" != "$a1" ] && echo yes)"
check "raw.test again" "$OK" "$(get http://raw.test/a3)"
check "... gets its own connection back" "$a1" "$(conn_of ' /a3 ')"
check "... on another port: a connection of its own" "$OK" "$(get http://raw.test:82/x1)"
check "... not raw.test:80's" "yes" "$([ "$(conn_of ' /x1 ')" != "$a1" ] && echo yes)"

# ---- a reload: what was opened under the old policy is not reused ----
reload || echo "not ok - the gateway did not answer SIGHUP"
check "after a reload" "$OK" "$(get http://raw.test/a4)"
check "... a new upstream connection" "yes" "$([ "$(conn_of ' /a4 ')" != "$a1" ] && echo yes)"

# ---- a reload while a request is under way: its connection is not kept ----
world_host_bg curl -s -m 10 -x http://203.0.113.1:3128 -o "$T/g1.out" http://raw.test:86/g1
g1_pid=$!
wait_grep "$R/requests.log" " /g1 " || echo "not ok - the slow origin never read /g1"
reload || echo "not ok - the gateway did not answer SIGHUP"
wait "$g1_pid"
check "a request answered after a reload that came while it was under way" \
	"raw-origin ok $(sha '')" "$(cat "$T/g1.out")"
check "... the next request does not get its connection (opened under the old policy)" "$OK" \
	"$(get http://raw.test:86/g2)"
check "... a new one" "yes" "$([ "$(conn_of ' /g2 ')" != "$(conn_of ' /g1 ')" ] && echo yes)"

# ---- an origin that closes a kept-alive connection under a request ----
check "drop2: a first GET" "$OK" "$(get http://raw.test:81/r1)"
check "a GET on that connection, which its origin closes unanswered: retried, answered" "$OK" \
	"$(get http://raw.test:81/r2)"
check "... the origin read it twice: dropped on the pooled connection, answered on a new one" \
	"1 1 yes" "$(seen ' /r2 dropped') $(seen ' /r2 body=') \
$([ "$(conn_of ' /r2 dropped')" != "$(conn_of ' /r2 body=')" ] && echo yes)"
check "... audited once" "1" "$(audit_count '"path":"/r2"')"
out=$(world_host curl -s -m 10 -x http://203.0.113.1:3128 -o /dev/null -w '%{http_code}' \
	-X POST http://raw.test:81/p1)
check "a POST (no body) there, closed unanswered: 502, not sent again" "502 1 0" \
	"$out $(seen ' /p1 dropped') $(seen ' /p1 body=')"
check "... audited as the origin closing" '"reason":"bad-response"' \
	"$(audit_match '"path":"/p1"' | grep -o '"reason":"bad-response"')"

# A request the client sent in the same write as the GET (pipelined) is
# the next request's, not part of the GET: the GET is retried all the same.
out=$(world_host "$PY" - <<'PYC'
import socket
def one(reqs):
    s = socket.create_connection(("203.0.113.1", 3128), timeout=10)
    s.sendall(reqs)
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    return data
g = b"GET http://raw.test:81/%s HTTP/1.1\r\nHost: raw.test:81\r\n\r\n"
one(g % b"q1")
data = one(g % b"q2" + g % b"q3")
print(data.count(b"HTTP/1.1 200"), data.count(b"HTTP/1.1 502"))
PYC
)
check "a GET with another pipelined behind it, on a connection its origin closes unanswered: both answered" \
	"2 0" "$out"
check "... the GET read twice: dropped, then answered on a new connection" "1 1" \
	"$(seen ' /q2 dropped') $(seen ' /q2 body=')"
check "... the pipelined one answered once" "1" "$(seen ' /q3 body=')"

# ---- an origin that says more than it was asked ----
check "trail: an answer with a second one after it in the same write" "$OK" \
	"$(get http://raw.test:82/t1)"
check "... the next request gets its own answer" "$OK" "$(get http://raw.test:82/t2)"
check "... on a new connection (the one that said too much is not reused)" "yes" \
	"$([ "$(conn_of ' /t1 ')" != "$(conn_of ' /t2 ')" ] && echo yes)"

check "chatty: an answer" "$OK" "$(get http://raw.test:83/c1)"
c1=$(conn_of ' /c1 ')
wait_grep "$R/requests.log" "conn=$c1 port=83 chatty" ||
	echo "not ok - the chatty origin said nothing out of turn"
check "... then an unasked-for answer on the idle connection: the next request gets its own" \
	"$OK" "$(get http://raw.test:83/c2)"
check "... on a new connection" "yes" "$([ "$(conn_of ' /c2 ')" != "$c1" ] && echo yes)"

check "headbody: a HEAD answered with a body" "200" \
	"$(world_host curl -s -m 10 -x http://203.0.113.1:3128 -I -o /dev/null -w '%{http_code}' \
		http://raw.test:84/h1)"
check "... the next request gets its own answer, not that body" "$OK" \
	"$(get http://raw.test:84/h2)"
check "... on a new connection" "yes" \
	"$([ "$(conn_of ' /h1 ')" != "$(conn_of ' /h2 ')" ] && echo yes)"

# A response head that ends in a bare LF: llhttp ends it there, the
# gateway's search for its end ran on past bytes that no framing accounts
# for (which then vanished, and the connection was pooled). Refused: 502,
# nothing of it passed on, and the connection is not reused.
out=$(get -i http://raw.test:88/l1)
check "barelf: an answer whose head ends in a bare LF is refused" "502" "${out##* }"
check "... nothing of it reaches the client, head or body" "0" "$(grep -c HIDDEN <<<"$out")"
check "... audited as a bad response" '"reason":"bad-response"' \
	"$(audit_match '"path":"/l1"' | grep -o '"reason":"bad-response"')"
get http://raw.test:88/l2 >/dev/null
check "... and its connection is not reused" "yes" \
	"$([ -n "$(conn_of ' /l2 ')" ] && [ "$(conn_of ' /l1 ')" != "$(conn_of ' /l2 ')" ] && echo yes)"

# A login that holds for the connection (NTLM, Negotiate), not the request:
# the connection it went on must not serve another client, which would be
# served as the one who logged in. A Basic login (per request) does not
# keep a connection from the pool.
check "ntlm: a request with an NTLM login" "$OK" \
	"$(get -H 'Authorization: NTLM TlRMTVNTUAABAAAAB4IIAAAAAAAAAAAAAAAAAAAAAAA=' http://raw.test:89/n1)"
check "... the next client's request does not get its connection" "$OK" "$(get http://raw.test:89/n2)"
check "... a new one" "yes" "$([ -n "$(conn_of ' /n2 ')" ] && [ "$(conn_of ' /n1 ')" != "$(conn_of ' /n2 ')" ] && echo yes)"
check "a request with a Basic login" "$OK" "$(get -H 'Authorization: Basic dTpw' http://raw.test:89/n3)"
check "... its connection goes on to the next client" "$OK" "$(get http://raw.test:89/n4)"
check "... the same one" "$(conn_of ' /n3 ')" "$(conn_of ' /n4 ')"
check "an answer that asks for an NTLM login" "$OK" "$(get http://raw.test:90/w1)"
check "... its connection does not go on to the next client" "$OK" "$(get http://raw.test:90/w2)"
check "... a new one" "yes" "$([ -n "$(conn_of ' /w2 ')" ] && [ "$(conn_of ' /w1 ')" != "$(conn_of ' /w2 ')" ] && echo yes)"

# An origin that does not read a body (a handler that ignores its
# Content-Length, "CL.0") reads it as a request nobody decided, and answers
# it late: that answer must never reach the client of the next exchange
# that would take the connection (here another client's, for a path the
# policy allows, while the one in the body is refused).
check "cl0: the policy refuses /secret/" "403" \
	"$(world_host curl -s -m 10 -x http://203.0.113.1:3128 -o /dev/null -w '%{http_code}' \
		http://cl0.test:87/secret/x)"
out=$(world_host "$PY" - <<'PYC'
import re, socket
def exchange(req):
    s = socket.create_connection(("203.0.113.1", 3128), timeout=10)
    s.sendall(req)
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise SystemExit("closed before the answer's head: %r" % buf)
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    cl = int(re.search(rb"Content-Length: (\d+)", head).group(1))
    while len(rest) < cl:
        d = s.recv(65536)
        if not d:
            raise SystemExit("closed inside the answer's body: %r" % buf)
        rest += d
    s.close()
    return rest[:cl].split(b" ")[1].decode()
inner = b"GET /secret/x HTTP/1.1\r\nHost: cl0.test:87\r\n\r\n"
a = exchange(b"POST http://cl0.test:87/static/a HTTP/1.1\r\nHost: cl0.test:87\r\n"
             b"Content-Length: %d\r\n\r\n%s" % (len(inner), inner))
b = exchange(b"GET http://cl0.test:87/public/b HTTP/1.1\r\nHost: cl0.test:87\r\n\r\n")
print(a, b)
PYC
)
check "cl0: a POST whose body the origin reads as a request for /secret/, then another client's GET: each gets its own answer" \
	"/static/a /public/b" "$out"
check "... the GET on a new connection (one that carried a body is not reused)" "yes" \
	"$([ "$(conn_of ' /static/a ')" != "$(conn_of ' /public/b ')" ] && echo yes)"

# ---- what the client sends while its request is answered ----
# A request without a body leaves the gateway reading the client: what
# comes meanwhile is the next request, kept for when this one is done.
out=$(world_host "$PY" - <<'PYC'
import socket, time
s = socket.create_connection(("203.0.113.1", 3128), timeout=10)
s.sendall(b"GET http://raw.test:86/s1 HTTP/1.1\r\nHost: raw.test:86\r\n\r\n")
time.sleep(0.1)  # the origin answers 0.3 s late: the gateway is waiting for it
s.sendall(b"GET http://raw.test:86/s2 HTTP/1.1\r\nHost: raw.test:86\r\n\r\n")
s.shutdown(socket.SHUT_WR)  # and nothing more
data = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
print(data.count(b"HTTP/1.1 200"), data.count(b"raw-origin ok"), "closed")
PYC
)
check "a second request sent while the first waits for its answer, then the client's end: both answered, in order, then closed" \
	"2 2 closed" "$out"
check "... the origin read them in order" "/s1 /s2" \
	"$(grep -o ' /s[12] ' "$R/requests.log" | tr -d ' ' | tr '\n' ' ' | sed 's/ $//')"
check "... each audited" "1 1" "$(audit_count '"path":"/s1"') $(audit_count '"path":"/s2"')"

check "the gateway is still serving" "$OK" "$(get http://raw.test/last)"

# ---- the origin's address becomes the gateway host's own ----
# A pooled connection is taken before the host's address changes are read
# (an open connection goes where it went); the one its origin then closes
# under the request is retried on a new connection, whose address must be
# checked on the list read afresh: here it is the host's own, where a
# canary listens on every address of the host's port 80.
check "raw.test once more: its connection is pooled" "$OK" "$(get http://raw.test/before-local)"
world_host_bg "$PY" -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 80)); s.listen(8); open(sys.argv[1] + ".ready", "w").close()
while True:
    c, a = s.accept()
    c.settimeout(2)
    try:
        d = c.recv(65536)
    except OSError:
        d = b""
    with open(sys.argv[1], "ab") as f:
        f.write(b"conn %r %r\n" % (a, d[:60]))
    c.close()' "$T/host-canary.log"
hc_pid=$!
world_kill_pids+=("$hc_pid")
wait_for_file "$T/host-canary.log.ready" || echo "not ok - the host's canary did not start"
world_host ip addr add "$N/32" dev lo
out=$(get http://raw.test/now-local)
world_host ip addr del "$N/32" dev lo
check "a request once the origin's address is the host's own: refused, not sent to the host" \
	"403" "${out##* }"
check "... the host's own service saw nothing" "" "$(cat "$T/host-canary.log" 2>/dev/null)"
check "... audited as the gateway host itself" '"reason":"private-address"' \
	"$(audit_match '"path":"/now-local"' | grep -o '"reason":"private-address"')"
kill "$hc_pid" 2>/dev/null
check "the address gone again: raw.test is served" "$OK" "$(get http://raw.test/after-local)"

# ---- the audit log, written in batches: one record per request, none lost ----
cat >"$T/load.py" <<'PY'
import http.client, sys, threading
prefix, threads, each = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
good = [0] * threads
def client(i):
    c = http.client.HTTPConnection("203.0.113.1", 3128, timeout=10)
    for k in range(each):
        c.request("GET", "http://raw.test/%s-%d-%d" % (prefix, i, k))
        r = c.getresponse()
        if r.status == 200 and r.read().startswith(b"raw-origin ok"):
            good[i] += 1
ts = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
print(sum(good))
PY
check "2000 requests from 20 kept-alive clients at once: all answered" "2000" \
	"$(world_host "$PY" "$T/load.py" load 20 100)"
check "... the origin read each once" "2000" "$(grep -c ' /load-' "$R/requests.log")"
check "... each has its own audit record" "2000" "$(grep -c '"path":"/load-' "$T/audit.log")"
check "... no line cut or run together: every line is one JSON record" "0" \
	"$("$PY" -c 'import json, sys
bad = 0
for line in open(sys.argv[1]):
    try:
        json.loads(line)
    except ValueError:
        bad += 1
print(bad)' "$T/audit.log")"

mv "$T/audit.log" "$T/audit.log.1"
kill -USR1 "$gw_pid"
for _ in $(seq 100); do [ -e "$T/audit.log" ] && break; sleep 0.05; done
check "SIGUSR1 (log rotation), then 200 more requests: answered" "200" \
	"$(world_host "$PY" "$T/load.py" rot 4 50)"
check "... their records in the new file, none in the old" "200 0" \
	"$(grep -c '"path":"/rot-' "$T/audit.log") $(grep -c '"path":"/rot-' "$T/audit.log.1")"
check "... and every earlier one still in the old" "2000" "$(grep -c '"path":"/load-' "$T/audit.log.1")"

# Requests the origin never answers, open when the gateway is stopped:
# their records are written as it shuts down, after its loop's last turn.
for i in $(seq 20); do
	world_host_bg curl -s -m 20 -x http://203.0.113.1:3128 -o /dev/null "http://raw.test:85/hang-$i"
done
for _ in $(seq 100); do [ "$(seen ' /hang-')" -ge 20 ] && break; sleep 0.1; done
check "20 requests held open by the origin" "20" "$(seen ' /hang-')"
kill -TERM "$gw_pid"
for _ in $(seq 100); do kill -0 "$gw_pid" 2>/dev/null || break; sleep 0.1; done
check "SIGTERM: the gateway stops" "stopped" "$(kill -0 "$gw_pid" 2>/dev/null || echo stopped)"
check "... each of the 20 has its record, written on the way out" "20" \
	"$(grep -c '"path":"/hang-' "$T/audit.log")"

finish
