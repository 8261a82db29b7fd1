#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Approval holds (docs/control.md): a request an `approve: true` rule
# allows waits until a person answers on the control socket. Shown from
# outside the gateway: the origin's request log (what reached it), the
# audit log (who decided, how long it waited), `sluice pending` (what
# waits), and the clients' own answers. The gateway is `sluice gateway`
# in the test world's host namespace; plain HTTP, CONNECT and inspected
# HTTPS are each held.
#
# Usage: test-approve.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-approve.sh ip nft nsenter python3 curl dnsmasq openssl

. "$here/world.sh"
PY=/usr/bin/python3
bg_pids=()
cleanup() {
	local p
	for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM
world_up || { echo "not ok - the test world did not come up"; exit 1; }
T=$WORLD_TMP
N=$WORLD_NET_ADDR
GW=203.0.113.1:3128
world_services hold.test=$N quick.test=$N free.test=$N tun.test=$N insp.test=$N ||
	{ echo "not ok - the world's services did not start"; exit 1; }

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: free.test
  - host: hold.test
    approve: true
  - host: quick.test
    approve: true
    approve_timeout: 1
  - host: tun.test
    ports: [443]
    approve: true
  - host: insp.test
    ports: [443]
    methods: [POST]
    paths: ["/upload"]
    approve: true
P
check_has "sluice check shows the hold and its timeout" "approve (held for a person's answer, 1s at most)" \
	"$("$SLUICE" check "$T/policy.yaml")"

mkdir -m 700 "$T/ca"
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" --listen $GW \
	--resolver "$N:53" --audit "$T/audit.log" --sandbox approve-$$ --upstream-ca "$T/cert.pem" \
	--ca-dir "$T/ca" --metrics 127.0.0.1:9464 || exit 1
gw=$world_gw_pid
# The approval-wait histogram's count for one outcome (docs/metrics.md).
waits() {
	world_host curl -s -m 5 http://127.0.0.1:9464/metrics |
		sed -n "s/^sluice_approval_wait_seconds_count{outcome=\"$1\"} //p"
}
SB=approve-$$

# Only our gateway's lines (other sluices may run on this machine).
pending() { "$SLUICE" pending | grep " $SB "; }
wait_pending() { # wait_pending N: until N of ours wait (bounded)
	for _ in $(seq 100); do
		[ "$(pending | grep -c .)" -ge "$1" ] && return 0
		sleep 0.05
	done
	return 1
}
wait_none() {
	for _ in $(seq 100); do
		[ -z "$(pending)" ] && return 0
		sleep 0.05
	done
	return 1
}
origin_count() { grep -c -- "$1" "$T/origin.log"; }
# curl in the background: its output (status and body) in $T/$1.out.
curl_bg() {
	local name=$1
	shift
	world_host_bg curl -s -m 20 -x "http://$GW" -o "$T/$name.body" -w '%{http_code}\n' \
		-D "$T/$name.hdr" "$@" >"$T/$name.out" 2>&1
	bg_pids+=($!)
	last_bg=$!
}

# ---- approve: exactly one request reaches the origin ----
curl_bg a1 http://hold.test/approve-me
wait_pending 1 || notok "the held request never showed in sluice pending"
line=$(pending)
id=${line%% *}
check_has "pending: ID, sandbox, method, host:port, path" " $SB GET hold.test:80 /approve-me - - " "$line"
check "pending: the ID is 12 hex digits" "1" "$(grep -cE '^[0-9a-f]{12}$' <<<"$id")"
check "while held, nothing reached the origin" "0" "$(origin_count /approve-me)"
check "while held, curl has no answer" "" "$(cat "$T/a1.out")"
out=$("$SLUICE" approve "$id")
check "sluice approve ID: exit 0" "0" "$?"
check_has "... and says so" "$id: approved" "$out"
wait "$last_bg"
check "the approved request got the origin's answer" "200" "$(cat "$T/a1.out")"
check "the origin's log shows exactly one request" "1" "$(origin_count /approve-me)"
rec=$(audit_match '"path":"/approve-me"')
check_has "its audit record: allow, approval approved by uid 0" \
	'"decision":"allow"' "$rec"
check_has "... approval, approved_by and wait_ms" '"approval":"approved","approved_by":0,"wait_ms":' "$rec"
out=$("$SLUICE" approve "$id" 2>&1)
check "approving it again: exit 1 (unknown ID)" "1" "$?"
check_has "... naming the ID" "unknown ID $id" "$out"
out=$("$SLUICE" approve nothex 2>&1)
check "a malformed ID: usage error (exit 2)" "2" "$?"

# ---- deny ----
curl_bg d1 http://hold.test/deny-me
wait_pending 1 || notok "the second held request never showed"
id=$(pending | cut -d' ' -f1)
"$SLUICE" deny "$id" >/dev/null
check "sluice deny ID: exit 0" "0" "$?"
wait "$last_bg"
check_has "the denied request got 403" "403" "$(cat "$T/d1.out")"
check_has "... with X-Sluice-Reason approval-denied" "X-Sluice-Reason: approval-denied" \
	"$(tr -d '\r' <"$T/d1.hdr")"
check "nothing of it reached the origin" "0" "$(origin_count /deny-me)"
check_has "its audit record: deny, approval-denied, by uid 0, with its wait" \
	'"decision":"deny","rule":"allow[2]","reason":"approval-denied"' \
	"$(audit_match '"path":"/deny-me"')"
check_has "... approved_by names who answered" '"approval":"denied","approved_by":0,"wait_ms":' \
	"$(audit_match '"path":"/deny-me"')"

# ---- another sandbox's taken-over gateway cannot swallow an answer ----
# It serves its own socket and may say "ok" to any approve or deny; it
# cannot list an ID it never held (they are random, and spoken only on the
# sockets). The answer goes to the one gateway whose pending lists the ID.
"$PY" - /run/sluice/ctl "$T/liar.ready" "$T/liar.log" <<'PYC' &
import os, socket, sys, time
path = "%s/%d.sock" % (sys.argv[1], os.getpid())
os.umask(0o177)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(16)
open(sys.argv[2], "w").close()
s.settimeout(1)
end = time.time() + 60
while time.time() < end:
    try:
        c, _ = s.accept()
    except OSError:
        continue
    c.settimeout(2)
    try:
        # The whole line: the CLI sends it and its "\n" apart, and a
        # close with the "\n" unread resets the CLI's read of the answer.
        q = b""
        while b"\n" not in q and len(q) < 512:
            d = c.recv(512)
            if not d:
                break
            q += d
        q = q.decode().strip()
        with open(sys.argv[3], "a") as f:
            f.write(q + "\n")
        if q == "info":
            c.sendall(b"* liar %d %d - 0 0 0 3\nok\n" % (os.getpid(), os.getpid()))
        elif q.startswith("approve "):
            c.sendall(b"ok approved\n")
        elif q.startswith("deny "):
            c.sendall(b"ok denied\n")
        else:
            c.sendall(b"ok\n")
    except OSError:
        pass
    c.close()
os.unlink(path)
PYC
liar=$!
bg_pids+=("$liar")
wait_for_file "$T/liar.ready" || notok "the lying socket did not start"
curl_bg l1 http://hold.test/deny-through-liar
l1=$last_bg
wait_pending 1 || notok "the request never showed"
id=$(pending | cut -d' ' -f1)
out=$("$SLUICE" deny "$id" 2>&1)
check "sluice deny ID with a lying socket about: exit 0" "0" "$?"
check_has "... names the gateway that held it" "$id: denied ($SB, pid $gw)" "$out"
wait "$l1"
check_has "... and that request was denied, not left waiting" "403" "$(cat "$T/l1.out")"
check_lacks "... the lying socket was never told the ID" "$id" "$(cat "$T/liar.log" 2>/dev/null)"
kill "$liar" 2>/dev/null
wait "$liar" 2>/dev/null
rm -f "/run/sluice/ctl/$liar.sock"

# ---- timeout ----
world_host curl -s -m 20 -x "http://$GW" -o /dev/null -D "$T/t1.hdr" -w '%{http_code}' \
	http://quick.test/nobody-answers >"$T/t1.out"
check "nobody answers within approve_timeout: 403" "403" "$(cat "$T/t1.out")"
check_has "... reason approval-timeout" "X-Sluice-Reason: approval-timeout" "$(tr -d '\r' <"$T/t1.hdr")"
check "... nothing reached the origin" "0" "$(origin_count /nobody-answers)"
rec=$(audit_match '"path":"/nobody-answers"')
check_has "... audited: approval timeout, nobody answered, its wait" \
	'"approval":"timeout","approved_by":null,"wait_ms":' "$rec"
w=$(sed 's/.*"wait_ms":\([0-9]*\).*/\1/' <<<"$rec")
check "... it waited about its timeout (>= 1000 ms)" "1" "$([ "${w:-0}" -ge 1000 ] && echo 1)"

# ---- CONNECT: host and port only ----
world_host curl -s -m 20 -x "http://$GW" -p --cacert "$T/cert.pem" -o /dev/null -w '%{http_code}' \
	https://tun.test/through-tunnel >"$T/c1.out" 2>&1 &
bg_pids+=($!)
c1=$!
wait_pending 1 || notok "the CONNECT never showed in pending"
line=$(pending)
check_has "a held CONNECT shows host and port, no path or body" " $SB CONNECT tun.test:443 - - - " "$line"
check "... nothing reached the origin" "0" "$(origin_count /through-tunnel)"
"$SLUICE" approve "${line%% *}" >/dev/null
wait "$c1"
check "... approved, the tunnel carries the request" "200" "$(cat "$T/c1.out")"
check "... exactly once" "1" "$(origin_count /through-tunnel)"

# ---- SOCKS5 on the proxy port: decided as CONNECT is, held the same ----
world_host curl -s -m 20 -x "socks5h://$GW" --cacert "$T/cert.pem" -o /dev/null -w '%{http_code}' \
	https://tun.test/through-socks >"$T/s1.out" 2>&1 &
bg_pids+=($!)
s1=$!
wait_pending 1 || notok "the SOCKS5 request never showed in pending"
line=$(pending)
check_has "a held SOCKS5 CONNECT shows host and port" " $SB CONNECT tun.test:443 - - - " "$line"
check "... nothing reached the origin" "0" "$(origin_count /through-socks)"
"$SLUICE" approve "${line%% *}" >/dev/null
wait "$s1"
check "... approved, it gets through" "200" "$(cat "$T/s1.out")"
check "... exactly once" "1" "$(origin_count /through-socks)"
check_has "... audited as SOCKS5, approved" '"proto":"socks5"' \
	"$(audit_match '"host":"tun.test"' '"approval":"approved"' '"proto":"socks5"')"

# ---- inspected: method, path, the body's size and start, escaped ----
printf 'line1\nline2\033[31mred\033]0;title\007' >"$T/body.bin"
world_host curl -s -m 20 -x "http://$GW" --cacert "$T/ca/ca-bundle.crt" -o /dev/null \
	-w '%{http_code}' --data-binary @"$T/body.bin" https://insp.test/upload >"$T/i1.out" 2>&1 &
bg_pids+=($!)
i1=$!
wait_pending 1 || notok "the inspected request never showed in pending"
for _ in $(seq 50); do pending | grep -q 'line1' && break; sleep 0.05; done
raw=$("$SLUICE" pending)
line=$(pending)
check_has "an inspected request shows method, path, body size and its first bytes, escaped" \
	" $SB POST insp.test:443 /upload 29 line1\\x0aline2\\x1b[31mred\\x1b]0;title\\x07 " "$line"
check "... the operator's terminal gets no control byte from it" "0" \
	"$(printf '%s' "$raw" | tr -d '\n' | LC_ALL=C grep -c '[[:cntrl:]]')"
check "... nothing reached the origin" "0" "$(origin_count 'POST /upload')"
"$SLUICE" approve "${line%% *}" >/dev/null
wait "$i1"
check "... approved, it reached the origin with its body" "200" "$(cat "$T/i1.out")"
check "... exactly once" "1" "$(origin_count 'POST /upload')"
check_has "... its record is an inspected allow, approved" '"tls":"inspect"' \
	"$(audit_match '"path":"/upload"' '"approval":"approved"')"

# ---- pipelined behind a held inspected request ----
# BODY_START is the held request's own body: not the next request's bytes,
# which came in the same write, and which wait to be decided (and held)
# on their own.
before=$(origin_count 'POST /upload')
world_host "$PY" - "$GW" "$T/ca/ca-bundle.crt" >"$T/p1.out" 2>"$T/p1.err" <<'PYC' &
import re, socket, ssl, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=30)
s.sendall(b"CONNECT insp.test:443 HTTP/1.1\r\nHost: insp.test:443\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    d = s.recv(1)
    if not d:
        raise SystemExit("closed during CONNECT: %r" % head)
    head += d
ctx = ssl.create_default_context(cafile=sys.argv[2])
t = ctx.wrap_socket(s, server_hostname="insp.test")
req = b"POST /upload HTTP/1.1\r\nHost: insp.test\r\nContent-Length: %d\r\n\r\n%s"
t.sendall(req % (5, b"hello") + req % (4, b"evil"))
got = b""
try:
    while got.count(b"HTTP/1.1 ") < 2:
        d = t.recv(65536)
        if not d:
            break
        got += d
except OSError as e:
    print(e, file=sys.stderr)
print(repr(got), file=sys.stderr)
print(" ".join(m.decode() for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", got)))
PYC
p1=$!
bg_pids+=("$p1")
wait_pending 1 || notok "the first pipelined request never showed in pending"
line=$(pending)
check_has "a held request with another pipelined behind it shows its own body only" \
	" $SB POST insp.test:443 /upload 5 hello " "$line"
check_lacks "... not the next request's bytes" "helloPOST" "$line"
"$SLUICE" approve "${line%% *}" >/dev/null
for _ in $(seq 100); do pending | grep -q ' evil ' && break; sleep 0.05; done
line2=$(pending)
check_has "... the next one is held on its own once the first is answered" \
	" $SB POST insp.test:443 /upload 4 evil " "$line2"
"$SLUICE" deny "${line2%% *}" >/dev/null
wait "$p1"
check "... the first went, the second was refused" "200 403" "$(cat "$T/p1.out")"
[ "$(cat "$T/p1.out")" = "200 403" ] || echo "# $(cat "$T/p1.err")"
check "... the origin saw only the first" "$((before + 1))" "$(origin_count 'POST /upload')"

# ---- the metrics count each person's answer and each timeout ----
check "the approval-wait histogram: 5 approved, 3 denied, 1 timed out" "5 3 1" \
	"$(waits approved) $(waits denied) $(waits timeout)"

# ---- the client goes away while held ----
curl_bg g1 http://hold.test/goes-away
g1=$last_bg
wait_pending 1 || notok "the request never showed"
kill "$g1"
wait "$g1" 2>/dev/null
wait_none
check "a held request whose client went away leaves pending" "" "$(pending)"
check_has "... audited as client-gone" '"approval":"client-gone"' \
	"$(audit_match '"path":"/goes-away"')"
check "... nothing reached the origin" "0" "$(origin_count /goes-away)"

# ---- the bound: an agent cannot hold open what it likes ----
for i in $(seq 16); do curl_bg b$i "http://hold.test/bound-$i"; done
wait_pending 16 || notok "16 held requests did not all show"
world_host curl -s -m 20 -x "http://$GW" -o /dev/null -D "$T/b17.hdr" -w '%{http_code}' \
	http://hold.test/bound-17 >"$T/b17.out"
check "the 17th request that needs approval is refused at once: 403" "403" "$(cat "$T/b17.out")"
check_has "... reason approval-busy" "X-Sluice-Reason: approval-busy" "$(tr -d '\r' <"$T/b17.hdr")"
check_has "... and audited" '"reason":"approval-busy"' "$(audit_match '"path":"/bound-17"')"
check "... 16 still wait" "16" "$(pending | grep -c .)"

# ---- a reload refuses what waits: the new policy decides it anew ----
n=$(grep -cE ': (not )?reloaded' "$T/gw.log")
"$SLUICE" reload "$gw" >/dev/null
check "sluice reload with requests held: exit 0" "0" "$?"
wait_none
check "after a reload, nothing waits" "" "$(pending)"
for i in $(seq 16); do wait "${bg_pids[-$i]}" 2>/dev/null; done
check "... each was answered 403" "16" "$(cat "$T"/b{1..16}.out | grep -c 403)"
check "... approval-reloaded, audited" "16" \
	"$(audit_count '"reason":"approval-reloaded"' '"approval":"reloaded"')"
check "... and none reached the origin" "0" "$(origin_count /bound-)"
check "free.test (no approve) is not held" "200" \
	"$(world_host curl -s -m 10 -x "http://$GW" -o /dev/null -w '%{http_code}' http://free.test/x)"

# ---- capture: a sandbox's TLS connection that never asked a proxy ----
mkdir -m 1777 "$T/w"
world_host_bg "$SLUICE" run --ro "$T" --rw "$T/w" --policy "$T/policy.yaml" --resolver "$N:53" \
	--audit "$T/run-audit.log" -- sh -c \
	"curl -s --noproxy '*' -m 30 --cacert $T/cert.pem -o /dev/null -w '%{http_code}' \
		https://tun.test/captured >$T/w/cap.out 2>&1" >"$T/run.out" 2>&1
run_pid=$!
bg_pids+=("$run_pid")
name=
for _ in $(seq 200); do
	name=$("$SLUICE" ps | awk -v p="$run_pid" '$2 == p { print $1 }')
	[ -n "$name" ] && "$SLUICE" pending | grep -q "^[0-9a-f]* $name " && break
	sleep 0.05
done
line=$("$SLUICE" pending | grep " $name ")
check_has "a captured TLS connection is held on host and port (no method, path or body)" \
	" $name - tun.test:443 - - - " "$line"
[ -n "$line" ] || echo "# run: $(cat "$T/run.out") audit: $(cat "$T/run-audit.log")"
check "... nothing reached the origin" "0" "$(origin_count /captured)"
"$SLUICE" approve "${line%% *}" >/dev/null
wait "$run_pid"
check "... approved, the sandbox's client gets through" "200" "$(cat "$T/w/cap.out")"
check "... exactly once" "1" "$(origin_count /captured)"

finish
