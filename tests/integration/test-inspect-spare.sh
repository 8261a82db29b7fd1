#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The inspected path's spare origin connections (inspect-upstream.c,
# insp_up_spare): after an exchange whose connection may not be pooled
# because it carried a body (test-inspect-cl0 says why), a new connection
# takes its place in the pool, and a request may take it before its TLS
# handshake is done. Against an origin that can hold the next
# connection's handshake back (lib/slow-hs-origin.py):
#   - a request whose spare is still mid-handshake when its owner closes,
#     or whose handshake outlasts the connect deadline, or that nobody
#     takes: the gateway lives on (and, in the sanitizer build, stays
#     quiet), and a request that took a spare that failed before anything
#     was sent on it goes on a new connection (answered, not a 504);
#   - a pipelined GET behind a POST;
#   - a spare waits in the pool for 4 s only (an origin that closes idle
#     connections sooner would close one under a POST, never sent twice);
#   - a spare whose origin speaks before anyone asked is closed;
#   - 72 POSTs from 12 clients at once: the pool's bound (4 per host)
#     holds, nothing is left open beyond it;
#   - SIGTERM with spares mid-handshake, taken and not: a clean exit.
#
# Usage: test-inspect-spare.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u
here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-$here/../../build/cli/sluice}")
. "$here/lib/checks.sh"
needs_root test-inspect-spare.sh ip nft nsenter python3 dnsmasq openssl ss
. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
R=$T/raw
mkdir -m 777 "$R"
mkdir -m 700 "$T/ca"
cat >"$T/dnsmasq.conf" <<CONF
no-resolv
no-hosts
listen-address=$N
bind-interfaces
address=/raw.test/$N
CONF
world_bg "$WORLD_NET" dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=raw.test \
	-addext subjectAltName=DNS:raw.test -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
world_bg "$WORLD_NET" "$PY" "$here/lib/slow-hs-origin.py" "$R" "$N" 443 "$T/cert.pem" "$T/key.pem"
wait_for_file "$R/ready" || { echo "not ok - the origin did not start"; exit 1; }
cat >"$T/policy.yaml" <<'P'
version: 1
allow:
  - host: raw.test
    ports: [443]
    paths: ["/*"]
P
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen 203.0.113.1:3128 --resolver "$N:53" --audit "$T/audit.log" --sandbox test \
	--upstream-ca "$T/cert.pem" --ca-dir "$T/ca" --connect-timeout 2000 || exit 1
ex() { world_host env CA="$T/ca/ca-bundle.crt" "$PY" "$here/lib/spare-client.py" "$@"; }
# A reload flushes the pool: each part starts with no spare left over.
hup() {
	local n
	n=$(grep -c ': reloaded' "$T/gw.log")
	kill -HUP "$world_gw_pid"
	for _ in $(seq 50); do [ "$(grep -c ': reloaded' "$T/gw.log")" -gt "$n" ] && return; sleep 0.1; done
	notok "the gateway did not say it reloaded: $(tail -3 "$T/gw.log")"
}
alive() { # alive NAME: the gateway runs, and no sanitizer spoke
	if kill -0 "$world_gw_pid" 2>/dev/null && ! grep -qE 'Sanitizer|runtime error:' "$T/gw.log"; then
		ok "$1: the gateway lives on, no sanitizer report"
	else
		notok "$1: $(tail -30 "$T/gw.log")"
	fi
}
conn_of() { sed -n "s|.*echo $1 conn=\([0-9]*\).*|\1|p" <<<"$2" | head -n 1; } # conn_of TARGET OUT
n_conns() { grep -c ' handshake$' "$R/conns"; }

# S1: a spare taken mid-handshake (the origin holds it 1 s), its owner gone
# before the handshake ends.
out=$(ex "POST /arm1" "ABORT:0.3 GET /b" "SLEEP:1.5" "GET /c")
check_has "a spare's owner gone mid-handshake: a later GET is answered" "echo /c" "$out"
alive "owner gone mid-handshake"

# S2: a request takes a spare whose handshake (3 s) outlasts the connect
# deadline (2 s): nothing was sent on it, so it goes on a new connection.
hup
before=$(n_conns)
out=$(ex "POST /arm3" "GET /e")
spare=$((before + 2)) # the POST's connection, then the spare
check "a spare that failed before anything went on it: its request is answered" "200 OK" \
	"$(grep -o '200 OK' <<<"$(sed -n 2p <<<"$out")")"
got=$(conn_of /e "$out")
if [ -n "$got" ] && [ "$got" != "$spare" ]; then
	ok "... on a new connection ($got), not the spare ($spare)"
else
	notok "the GET was answered on connection '${got}', the spare is $spare: $out"
fi
alive "spare past its connect deadline"

# S3: a spare nobody takes outlasts the connect deadline.
hup
out=$(ex "POST /arm3" "SLEEP:2.5" "GET /f")
check_has "an untaken spare past its deadline: the GET after is answered" "echo /f" "$out"
alive "untaken spare past its deadline"

# S4: a GET pipelined behind a POST takes the spare the POST left, while it
# is connecting; then the same with the client gone as soon as the POST's
# answer is in.
hup
out=$(ex "PIPE" "PIPEABORT" "SLEEP:0.5" "GET /i")
check_has "a GET pipelined behind a POST is answered" "echo /g1" "$out"
check_has "... and a later one, after a client that left mid-way" "echo /i" "$out"
alive "pipelined behind a POST"

# S5: a spare waits 4 s in the pool, then is closed (the origin sees its EOF
# with no request on it); the POST after that goes on a new connection.
hup
before=$(n_conns)
out=$(ex "POST /k1" "SLEEP:5" "POST /k2")
spare=$((before + 2))
check "a spare nobody took is closed after 4 s, unused" "conn=$spare eof" \
	"$(grep -x "conn=$spare eof" "$R/conns")"
check "... with no request on it" "" "$(grep "^conn=$spare " "$R/requests.log")"
check "... and the POST after goes on a new connection" "$((spare + 1))" "$(conn_of /k2 "$out")"
out=$(ex "POST /k3" "SLEEP:1" "POST /k4")
check "within 4 s, the next POST takes the spare the last one left" \
	"$(($(conn_of /k3 "$out") + 1))" "$(conn_of /k4 "$out")"

# S5b: a spare whose origin speaks before anyone asked is closed, not
# kept: the next request never gets that answer.
hup
out=$(ex "POST /chatty" "SLEEP:0.5" "GET /after-chatty")
check_has "a spare whose origin spoke unasked is closed: the next GET gets its own answer" \
	"echo /after-chatty" "$out"
check "... the origin did speak on it (the test stands on that)" "1" "$(grep -c ' spoke$' "$R/conns")"

# S6: 12 clients posting at once, 6 POSTs each: the pool's bound holds.
hup
pids=()
for i in $(seq 12); do
	world_host_bg env CA="$T/ca/ca-bundle.crt" "$PY" "$here/lib/spare-client.py" \
		"POST /s" "POST /s" "POST /s" "POST /s" "POST /s" "POST /s" >"$T/s6.$i" 2>&1
	pids+=($!)
done
wait "${pids[@]}"
check "72 POSTs from 12 clients at once: all answered" "72" "$(cat "$T"/s6.* | grep -c '200 OK')"
sleep 0.5
est=$(world_net ss -Htn state established "sport = :443" | grep -c .)
if [ "$est" -le 4 ]; then
	ok "... and at most 4 connections (the pool's bound per host) are left open: $est"
else
	notok "$est connections to the origin are left open, over the pool's bound of 4"
fi
alive "72 POSTs at once"

# stream_bg OUT: after a reload, "POST /stream2" in the background (its
# answer's head at once, its body 2 s later; what the client prints goes to
# OUT), and up to 1.5 s for the origin to see two connections' handshakes
# (the POST's, the spare's). Sets before (the count before it) and held
# (the client's pid).
stream_bg() {
	hup
	before=$(n_conns)
	world_host_bg env CA="$T/ca/ca-bundle.crt" "$PY" "$here/lib/spare-client.py" \
		"POST /stream2" >"$1" 2>&1
	held=$!
	for _ in $(seq 30); do [ "$(n_conns)" -ge $((before + 2)) ] && break; sleep 0.05; done
}

# S6b: the spare is made once the answer to a POST has begun, not when it
# has ended: while the origin holds the rest of a POST's answer (a model's
# streamed for seconds), the spare's handshake has begun, and the next POST
# goes on it.
stream_bg "$T/s6b.out"
if kill -0 "$held" 2>/dev/null; then
	check "while the rest of a POST's answer is held, the spare's handshake has begun" \
		"$((before + 2))" "$(n_conns)"
else
	notok "the held POST was answered within 1.5 s: $(cat "$T/s6b.out")"
fi
wait "$held"
check_has "... the POST gets its whole answer" "echo /stream2 conn=$((before + 1))" "$(cat "$T/s6b.out")"
out=$(ex "POST /after-stream")
check "... and the next POST goes on the spare" "$((before + 2))" "$(conn_of /after-stream "$out")"

# long_stream S PAUSE: a POST whose answer is streamed for S s (longer than
# half a spare's 4 s wait), then PAUSE s of quiet: the spare made as the
# answer began is gone, closed unused, and another made at its end waits
# for the next POST.
long_stream() {
	local before
	hup
	before=$(n_conns)
	out=$(ex "POST /stream$1")
	check_has "an answer streamed for $1 s is answered" "echo /stream$1 conn=$((before + 1))" "$out"
	sleep "$2"
	check "... the spare made as it began is closed, unused" "conn=$((before + 2)) eof" \
		"$(grep -x "conn=$((before + 2)) eof" "$R/conns")"
	for _ in $(seq 30); do [ "$(n_conns)" -ge $((before + 3)) ] && break; sleep 0.05; done
	check "... and another, made at the answer's end, waits $2 s later" "$((before + 3))" "$(n_conns)"
	check "... which the next POST takes" "$((before + 3))" \
		"$(conn_of /after-$1 "$(ex "POST /after-$1")")"
}
# S6c: streamed for 5 s, past the early spare's 4 s.
long_stream 5 0
# S6e: streamed for 3 s, which leaves the early spare 1 s: it is closed at
# the answer's end for a new one, which a POST 1.5 s later finds waiting.
long_stream 3 1.5

# S6f: a reload while a POST's answer streams: the spare made before it is
# flushed, and none is made at the end for an exchange decided under the
# old policy (the address it would reuse was chosen under that policy).
# Red only with both guards gone (insp_up_spare's policy check and
# pool_has_room's generation).
stream_bg "$T/s6f.out"
hup
wait "$held"
check_has "a POST whose answer streamed across a reload is answered" "echo /stream2" \
	"$(cat "$T/s6f.out")"
check "... its early spare was flushed by the reload" "conn=$((before + 2)) eof" \
	"$(grep -x "conn=$((before + 2)) eof" "$R/conns")"
sleep 0.3
check "... and no spare is made at its end" "$((before + 2))" "$(n_conns)"

# S6d: no spare for a POST whose origin answers "Connection: close": the
# exchange's end would not make one either.
hup
before=$(n_conns)
out=$(ex "POST /close")
check_has "a POST answered Connection: close is answered" "echo /close" "$out"
sleep 0.3
check "... and no spare is made for it" "$((before + 1))" "$(n_conns)"

# S7: SIGTERM with one spare taken and one not, both mid-handshake.
hup
ex "POST /arm5" >/dev/null
world_host_bg env CA="$T/ca/ca-bundle.crt" "$PY" "$here/lib/spare-client.py" "GET /h" >"$T/bg.out" 2>&1
bgpid=$!
sleep 0.3
ex "POST /arm5" >/dev/null
sleep 0.2
kill -TERM "$world_gw_pid"
for _ in $(seq 100); do kill -0 "$world_gw_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$world_gw_pid" 2>/dev/null; then
	notok "the gateway still runs 10 s after SIGTERM, with spares mid-handshake"
else
	wait "$world_gw_pid"
	check "SIGTERM with spares mid-handshake: the gateway exits cleanly" "0" "$?"
fi
wait "$bgpid" 2>/dev/null
if grep -qE 'Sanitizer|runtime error:' "$T/gw.log"; then
	notok "a sanitizer spoke: $(grep -m1 -A20 -E 'Sanitizer|runtime error:' "$T/gw.log")"
else
	ok "... and no sanitizer report"
fi
finish
