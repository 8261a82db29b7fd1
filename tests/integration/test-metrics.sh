#!/bin/bash
# SPDX-License-Identifier: MIT
#
# --metrics ADDR:PORT (docs/metrics.md): allowed, denied, inspected (a
# credential injected) and DNS traffic through `sluice gateway` and through
# `sluice run`, each scraped with real clients (curl, python's urllib), the
# text parsed by Prometheus' own parser and every counter compared with the
# audit log (lib/metrics-check.py); no secret's value in a scrape. The
# scrape server serves only GET /metrics, within bounds (head size, time,
# connections). From inside `sluice run` the metrics cannot be reached:
# the sandbox tries, a canary listener on the host sees nothing and the
# server's own count of connections shows only the test's scrapes. A bad
# --metrics is refused, naming the flag.
#
# Usage: test-metrics.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
# shellcheck source-path=SCRIPTDIR
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-metrics.sh ip nft nsenter python3 curl dnsmasq openssl ss
/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null ||
	{ echo "not ok - python3-prometheus-client is not installed: scripts/setup.sh --test"; exit 1; }

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
H=$WORLD_HOST_ADDR

make_keys "$T/secrets" || { echo "not ok - could not make the keys"; exit 1; }
ORIGIN_OPENAI_KEY_FILE=$T/secrets/openai.key ORIGIN_ANTHROPIC_KEY_FILE=$T/secrets/anthropic.key \
	world_services api.openai.com="$N" plain.test="$N" other.test="$N" denied.test="$N" \
	meta.test="$H" ||
	{ echo "not ok - services"; exit 1; }
chmod 644 "$T/cert.pem"

write_policy "$T/policy.yaml" <<P
version: 1
secrets:
  openai: { file: $T/secrets/openai.key }
allow:
  - host: api.openai.com
    inject: { header: Authorization, prefix: "Bearer ", secret: openai, placeholder_env: OPENAI_API_KEY }
  - host: plain.test
    methods: [GET]
  - host: other.test
  # A name the policy allows on every port, whose DNS answers the host's
  # own address (where the metrics are): only the address can refuse it.
  - host: meta.test
    ports: [9465]
P

# scrape URL OUT: the text, by curl; its status and content type in OUT.hdr.
n_scrapes=0
scrape() {
	n_scrapes=$((n_scrapes + 1))
	world_host curl -sS -m 10 -D "$2.hdr" -o "$2" "$1"
}
# settle URL AUDIT OUT: scrape until the records the counters counted are
# the log's (the log is written once per turn of the loop, the scrape may
# go out first); bounded.
settle() {
	local want got
	for _ in $(seq 40); do
		scrape "$1" "$3" || return 1
		got=$(awk '/^sluice_requests_total/ { s += $NF } END { print s + 0 }' "$3")
		want=$(grep -c . "$2")
		[ "$got" = "$want" ] && return 0
		sleep 0.1
	done
	return 1
}
checker() { # checker NAME SCRAPE AUDIT: lib/metrics-check.py's lines, counted
	local out line
	out=$("$PY" "$here/lib/metrics-check.py" "$2" "$3" "$T/secrets/openai.key" 2>&1)
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "$1: ${line#ok - }" ;;
		*) notok "$1: ${line#not ok - }" ;;
		esac
	done <<<"$out"
}
metric() { # metric FILE SERIES: its value (0 when absent)
	awk -v s="$2" '$1 == s { v = $2 } END { print v + 0 }' "$1"
}

# ---- sluice gateway ----
GW=$H:3128
M=127.0.0.1:9464
mkdir -m 700 "$T/ca"
world_gateway_up "$T/gw.log" 3128,9464,udp:53 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen $GW --dns $H:53 --resolver "$N:53" --audit "$T/audit.log" --sandbox mtest \
	--ca-dir "$T/ca" --upstream-ca "$T/cert.pem" --metrics $M || exit 1
gw_pid=$world_gw_pid
check_has "the gateway says where the metrics are" "metrics on http://$M/metrics" "$(cat "$T/gw.log")"

code() { world_host curl -s -m 10 -o /dev/null -w '%{http_code}' -x "http://$GW" "$@" 2>/dev/null; }
check "an allowed GET" 200 "$(code http://plain.test/hello)"
check "an allowed GET again" 200 "$(code http://plain.test/again)"
check "a host no rule names" 403 "$(code http://denied.test/)"
check "a method the rule does not name" 403 "$(code -X POST -d x http://plain.test/x)"
check "an inspected request, the key injected" 200 \
	"$(code --cacert "$T/ca/ca.crt" -H 'content-type: application/json' \
		-d '{"model":"m","messages":[{"role":"user","content":"hi"}]}' \
		https://api.openai.com/v1/chat/completions)"
check "a tunnel passed through" 200 "$(code --cacert "$T/cert.pem" https://other.test/tunnel)"
check "a DNS name the policy allows" 0 \
	"$(world_host "$PY" "$here/lib/dnsclient.py" $H q plain.test A | cut -d' ' -f1)"
check "a DNS name it does not" 3 \
	"$(world_host "$PY" "$here/lib/dnsclient.py" $H q nothere.test A | cut -d' ' -f1)"
check "through the proxy, the metrics are a refused destination" 403 \
	"$(code http://$M/metrics)"

wait_grep "$T/audit.log" '"credential":"openai"'
if settle "http://$M/metrics" "$T/audit.log" "$T/s1"; then
	ok "a scrape's requests add up to the audit log's records"
else
	notok "a scrape's requests never matched the audit log: $(grep -c . "$T/audit.log") records"
fi
checker "gateway" "$T/s1" "$T/audit.log"
check_has "200 with Prometheus' content type" "Content-Type: text/plain; version=0.0.4" \
	"$(tr -d '\r' <"$T/s1.hdr")"
check "the open connections gauge is 0 between requests" 0 \
	"$(metric "$T/s1" sluice_open_connections)"
check "the injection is counted by the secret's name" 1 \
	"$(metric "$T/s1" 'sluice_credential_injections_total{secret="openai"}')"
check "denied requests by their reason (denied.test, the metrics through the proxy)" 2 \
	"$(metric "$T/s1" 'sluice_requests_total{event="http",decision="deny",reason="no-rule"}')"

# python's urllib: a second real client, the same numbers.
out=$(world_host "$PY" - "http://$M/metrics" <<'PY'
import sys, urllib.request
r = urllib.request.urlopen(sys.argv[1], timeout=10)
body = r.read().decode()
print(r.status, r.headers["Content-Type"])
print(sum(float(l.split()[-1]) for l in body.splitlines() if l.startswith("sluice_requests_total")))
PY
)
check "urllib gets 200 and the content type" "200 text/plain; version=0.0.4; charset=utf-8" \
	"$(head -n1 <<<"$out")"
check "urllib's requests are the log's" "$(grep -c . "$T/audit.log")" \
	"$(tail -n1 <<<"$out" | cut -d. -f1)"

# ---- the scrape server's bounds ----
mcode() { world_host curl -s -m 10 -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; }
check "another path is 404" 404 "$(mcode http://$M/other)"
check "/metrics/ is 404 too" 404 "$(mcode http://$M/metrics/)"
check "POST is 405" 405 "$(mcode -X POST -d x http://$M/metrics)"
check "HEAD is 200" 200 "$(mcode -I http://$M/metrics)"
check "a query string is ignored" 200 "$(mcode "http://$M/metrics?x=1")"
raw_m() { world_host "$PY" - "$@" <<'PY'
import socket, sys, time
kind = sys.argv[1]
s = socket.create_connection(("127.0.0.1", 9464), 5)
s.settimeout(12)
if kind == "big":  # a head that never ends, past the 4096 bytes read
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 5000)
    except OSError:
        pass
elif kind == "garbage":
    s.sendall(b"\x16\x03\x01\x00\xff garbage\r\n\r\n")
elif kind == "slow":  # says nothing
    pass
t = time.monotonic()
data = b""
try:
    while True:
        d = s.recv(4096)
        if not d:
            break
        data += d
except OSError:
    pass  # a reset after the answer, to a client still sending
print(data.split(b"\r\n")[0].decode("latin-1") or "closed", "within %ds" % (time.monotonic() - t < 10 and 10 or 99))
PY
}
check "a head past 4 KiB gets 400 and is closed" "HTTP/1.1 400 Bad Request within 10s" "$(raw_m big)"
check "bytes that are no HTTP get 400" "HTTP/1.1 400 Bad Request within 10s" "$(raw_m garbage)"
check "a client that says nothing is answered 408 and closed" \
	"HTTP/1.1 408 Request Timeout within 10s" "$(raw_m slow)"
out=$(world_host "$PY" - <<'PY'
import socket, time
held = [socket.create_connection(("127.0.0.1", 9464), 5) for _ in range(8)]
time.sleep(0.3)  # all eight accepted before the ninth
s = socket.create_connection(("127.0.0.1", 9464), 5)
s.settimeout(4)
try:
    print("closed unread" if s.recv(100) == b"" else "answered")
except socket.timeout:
    print("held open")
except OSError:
    print("closed unread")
PY
)
check "past 8 scrapers at once, the next is closed unread" "closed unread" "$out"
scrape "http://$M/metrics" "$T/s2"
check_has "... and counted as refused" 'sluice_metrics_scrapes_total{code="refused"} 1' "$(cat "$T/s2")"

out=$(world_host "$SLUICE" gateway --policy "$T/policy.yaml" --listen $H:3140 --metrics nonsense 2>&1)
check "a bad --metrics exits 2 (usage)" 2 "$?"
check_has "... naming the flag" "--metrics 'nonsense'" "$out"
out=$(world_host "$SLUICE" gateway --policy "$T/policy.yaml" --listen $H:3140 --metrics $M 2>&1)
check_has "a --metrics port in use is refused, naming it" "--metrics '$M': address already in use" "$out"

kill -TERM "$gw_pid"
wait "$gw_pid"
check "the gateway stops cleanly with metrics served (no leak under ASan)" 0 "$?"
world_forget "$gw_pid"

# Without --audit the records are still made (and thrown away): counted.
world_gateway_up "$T/gw3.log" 3129,9466 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen $H:3129 --resolver "$N:53" --metrics 127.0.0.1:9466 || exit 1
gw_pid=$world_gw_pid
world_host curl -s -m 10 -o /dev/null -x "http://$H:3129" http://plain.test/noaudit
got=
for _ in $(seq 40); do
	scrape http://127.0.0.1:9466/metrics "$T/s3"
	got=$(metric "$T/s3" 'sluice_requests_total{event="http",decision="allow",reason="allowed"}')
	[ "$got" = 1 ] && break
	sleep 0.1
done
check "without --audit, --metrics still counts the requests" 1 "$got"
kill -TERM "$gw_pid"
wait "$gw_pid"
check "... and that gateway stops cleanly too" 0 "$?"
world_forget "$gw_pid"

# ---- sluice run ----
mkdir -m 1777 "$T/w"
world_bg "$WORLD_HOST" "$PY" "$here/lib/listener.py" "$T/canary.log" "0.0.0.0:9467"
canary_pid=${world_pids[-1]}
for _ in $(seq 50); do world_host ss -Hltn "sport = :9467" | grep -q . && break; sleep 0.1; done
n_scrapes=0
cat >"$T/inside.sh" <<SH
# What the sandbox does: traffic of every kind, then tries the metrics.
g=\${HTTP_PROXY#http://}; g=\${g%:*}
c() { curl -s -m 5 -o /dev/null -w '%{http_code}\n' "\$@"; }
{
c http://plain.test/hello
c http://denied.test/
c -X POST -d x http://plain.test/x
c -H 'content-type: application/json' -d '{"model":"m","messages":[{"role":"user","content":"hi"}]}' \
	https://api.openai.com/v1/chat/completions
c --cacert $T/cert.pem https://other.test/tunnel
$PY $T/dnsclient.py \$g q plain.test A
$PY $T/dnsclient.py \$g q nothere.test A
$PY -c '
import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("$WORLD_CANARY", 9999))
except OSError:
    pass  # refused at once: it is blocked, and logged'
} >$T/w/traffic.txt 2>&1
{
echo "direct: \$(curl -s -m 3 --noproxy '*' http://$H:9465/metrics | head -c 200)"
echo "proxied: \$(curl -s -m 3 http://$H:9465/metrics | head -c 200)"
echo "host end: \$(curl -s -m 3 --noproxy '*' http://\$g:9465/metrics | head -c 200)"
echo "canary host end: \$(curl -s -m 3 --noproxy '*' http://\$g:9467/ | head -c 200)"
echo "canary host: \$(curl -s -m 3 --noproxy '*' http://$H:9467/ | head -c 200)"
echo "socks5: \$(curl -s -m 3 -x "\$ALL_PROXY" http://$H:9465/metrics | head -c 200)"
echo "socks5 name: \$(curl -s -m 3 -x "\$ALL_PROXY" http://meta.test:9465/metrics | head -c 200)"
echo "proxied name: \$(curl -s -m 3 http://meta.test:9465/metrics | head -c 200)"
echo "captured name: \$(curl -s -m 3 --noproxy '*' http://meta.test:9465/metrics | head -c 200)"
echo "proxied loopback: \$(curl -s -m 3 http://127.0.0.1:9465/metrics | head -c 200)"
echo "socks5 tunnel: \$(curl -s -m 3 -p -x "\$ALL_PROXY" http://$H:9465/metrics | head -c 200)"
} >$T/w/tries.txt 2>&1
touch $T/w/done
for i in \$(seq 600); do [ -e $T/w/go ] && exit 0; sleep 0.1; done
SH
cp "$here/lib/dnsclient.py" "$T/dnsclient.py"
chmod 644 "$T/inside.sh" "$T/dnsclient.py"
world_host_bg "$SLUICE" run --ro "$T" --rw "$T/w" --policy "$T/policy.yaml" --resolver "$N:53" \
	--upstream-ca "$T/cert.pem" --audit "$T/audit-run.log" --metrics $H:9465 \
	-- sh "$T/inside.sh" >"$T/run.log" 2>&1
run_pid=$!
world_kill_pids+=("$run_pid")
for _ in $(seq 300); do [ -e "$T/w/done" ] && break; kill -0 $run_pid 2>/dev/null || break; sleep 0.1; done
[ -e "$T/w/done" ] || notok "the sandbox's command did not finish: $(cat "$T/run.log")"
check "the sandbox's traffic went as the policy says" "200 403 403 200 200 0 3" \
	"$(cut -d' ' -f1 "$T/w/traffic.txt" | tr '\n' ' ' | sed 's/ $//')"
wait_grep "$T/audit-run.log" '"event":"blocked"'
if settle "http://$H:9465/metrics" "$T/audit-run.log" "$T/r1"; then
	ok "run: a scrape's requests add up to the audit log's records"
else
	notok "run: a scrape's requests never matched the audit log"
fi
checker "run" "$T/r1" "$T/audit-run.log"
check_lacks "the sandbox got no metrics, whichever way it tried" "sluice_" "$(cat "$T/w/tries.txt")"
check "the canary listener on the host saw nothing from the sandbox" "" \
	"$(cat "$T/canary.log" 2>/dev/null)"
world_host "$PY" -c 'import socket; socket.create_connection(("127.0.0.1", 9467), 5).close()'
if wait_grep "$T/canary.log" "accept"; then
	ok "... and it does log what reaches it (from the host itself)"
else
	notok "the canary listener logs nothing even from the host: it proves nothing"
fi
scrape "http://$H:9465/metrics" "$T/r2"
check "the metrics server was reached only by the test's $n_scrapes scrapes" "$n_scrapes 0" \
	"$(metric "$T/r2" 'sluice_metrics_scrapes_total{code="200"}') $(awk \
		'/^sluice_metrics_scrapes_total/ && !/code="200"/ { s += $2 } END { print s + 0 }' "$T/r2")"
check_has "its attempts through the proxy are audited as refused" '"host":"203.0.113.1","port":9465' \
	"$(grep -F '"decision":"deny"' "$T/audit-run.log")"
check "... through SOCKS5 as well (ALL_PROXY)" 2 \
	"$(grep -F '"host":"203.0.113.1","port":9465' "$T/audit-run.log" | grep -F '"proto":"socks5"' |
		grep -cF '"decision":"deny"')"
check "a name the policy allows on that port, resolving to the host: refused by its address (proxy, SOCKS5)" 2 \
	"$(grep -F '"host":"meta.test","port":9465' "$T/audit-run.log" | grep -cF '"reason":"private-address"')"
# Defence in depth behind the fences: a peer from sluice's own pool
# (as a sandbox's packets would come) is closed unread, whatever address
# of the host's it reached.
world_host ip addr add 10.231.255.253/32 dev lo
out=$(world_host "$PY" - "$H" <<'PY'
import socket, sys
s = socket.socket()
s.bind(("10.231.255.253", 0))
s.settimeout(5)
s.connect((sys.argv[1], 9465))
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
try:
    print("closed unread" if s.recv(100) == b"" else "answered")
except OSError as e:
    print("closed unread" if isinstance(e, ConnectionResetError) else "error %s" % e)
PY
)
world_host ip addr del 10.231.255.253/32 dev lo
check "a scraper from the sandboxes' pool is closed unread" "closed unread" "$out"
scrape "http://$H:9465/metrics" "$T/r4"
check "... and counted as refused" 1 "$(metric "$T/r4" 'sluice_metrics_scrapes_total{code="refused"}')"
touch "$T/w/go"
wait "$run_pid"
check "run exits with the command's status" 0 "$?"

# Without --audit: still counted, blocked packets too.
world_host_bg "$SLUICE" run --ro "$T" --rw "$T/w" --policy "$T/policy.yaml" --resolver "$N:53" \
	--metrics $H:9468 -- sh -c "curl -s -m 5 -o /dev/null http://plain.test/noaudit
		$PY -c 'import socket
try: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b\"x\", (\"$WORLD_CANARY\", 9999))
except OSError: pass'
		touch $T/w/done2
		for i in \$(seq 600); do [ -e $T/w/go2 ] && exit 0; sleep 0.1; done" >"$T/run2.log" 2>&1
run_pid=$!
world_kill_pids+=("$run_pid")
wait_for_file "$T/w/done2" || wait_for_file "$T/w/done2"
got=
for _ in $(seq 60); do
	scrape "http://$H:9468/metrics" "$T/r3"
	got="$(metric "$T/r3" 'sluice_requests_total{event="http",decision="allow",reason="allowed"}') $(
		metric "$T/r3" 'sluice_blocked_packets_total{audit="logged"}')"
	[ "${got%% *}" = 1 ] && [ "${got#* }" != 0 ] && break
	sleep 0.1
done
check "run without --audit: --metrics counts the request and the blocked packet" "1 yes" \
	"${got%% *} $([ "${got#* }" -gt 0 ] 2>/dev/null && echo yes)"
touch "$T/w/go2"
wait "$run_pid"
check "... and exits with the command's status" 0 "$?"

out=$(world_host "$SLUICE" run --metrics 0.0.0.0:9465 -- true 2>&1)
check "run refuses a wildcard --metrics (125)" 125 "$?"
check_has "... naming the flag and why" "--metrics '0.0.0.0:9465': is a wildcard" "$out"
out=$(world_host "$SLUICE" run --metrics '[::]:9465' -- true 2>&1)
check_has "... [::] too" "--metrics '[::]:9465': is a wildcard" "$out"
out=$(world_host "$SLUICE" run --metrics 10.231.0.1:9465 -- true 2>&1)
check "run refuses a --metrics in its own pool (125)" 125 "$?"
check_has "... naming the flag" "--metrics '10.231.0.1:9465': is in sluice's own address pool" "$out"
out=$(world_host "$SLUICE" run --metrics 127.0.0.1 -- true 2>&1)
check_has "run: a --metrics without a port is refused" "--metrics '127.0.0.1'" "$out"

out=$(world_host "$SLUICE" attach --pid 1 --policy "$T/policy.yaml" --metrics 0.0.0.0:9465 2>&1)
check "attach refuses a wildcard --metrics (2, before it touches anything)" 2 "$?"
check_has "... naming the flag" "--metrics '0.0.0.0:9465': is a wildcard" "$out"

kill "$canary_pid" 2>/dev/null
check "the canary in the internet saw nothing" "0" "$(world_canary_count)"
finish
