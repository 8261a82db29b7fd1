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
log-queries
log-facility=$T/dns.log
CONF
world_bg "$WORLD_NET" dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=
world_bg "$WORLD_NET" "$PY" "$here/lib/raw-origin.py" "$R" "$N" 80:full 81:drop2 82:trail \
	83:chatty 84:headbody
wait_for_file "$R/ready" || { echo "not ok - the raw origin did not start"; exit 1; }

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: raw.test
    ports: [80, 81, 82, 83, 84]
  - host: other.test
    ports: [80]
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
reload() {
	local n
	n=$(grep -cE ': (not )?reloaded' "$T/gw.log")
	kill -HUP "$gw_pid"
	for _ in $(seq 100); do
		[ "$(grep -cE ': (not )?reloaded' "$T/gw.log")" -gt "$n" ] && return 0
		sleep 0.05
	done
	return 1
}

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

check "the gateway is still serving" "$OK" "$(get http://raw.test/last)"

finish
