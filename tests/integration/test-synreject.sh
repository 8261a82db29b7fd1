#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A captured connection to a TCP port no rule allows for any name is
# refused by the sandbox's nftables at its SYN (a reset: ECONNREFUSED at
# once, not accepted and then closed), copied to NFLOG and audited as a
# blocked packet; an allowed port is still captured and decided; a reload
# that adds a port captures it from then on, and a reload that fails
# changes nothing. The canary sees nothing throughout.
#
# Usage: test-synreject.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-synreject.sh ip nft nsenter python3 curl dnsmasq openssl

. "$here/world.sh"

world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
world_services allowed.test=$N denied.test=$N || { echo "not ok - services"; exit 1; }
cp "$here/lib/portprobe.py" "$T/portprobe.py"
cp "$here/lib/keepalive.py" "$T/keepalive.py"
mkdir -m 777 "$T/w"
# A second origin port, which only the reloaded policy allows.
world_bg "$WORLD_NET" python3 -m http.server 8080 --bind "$N" --directory "$T/w" >/dev/null 2>"$T/alt.log"
for _ in $(seq 50); do world_net ss -Hltn "sport = :8080" | grep -q . && break; sleep 0.1; done

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
  - host: 203.0.113.2
    ports: [7]
    protocol: tcp
P

probe() { "$(command -v python3)" "$T/portprobe.py" "$@"; }
run() {
	world_host "$SLUICE" run --ro "$T" --policy "$T/policy.yaml" --resolver "$N:53" \
		--audit "$T/audit.log" -- "$@" 2>&1
}
blocked_tcp() { audit_count '"event":"blocked"' '"method":"tcp"' "\"host\":\"$1\",\"port\":$2"; }

before=$(world_canary_count)
check "a port no rule allows: refused at the SYN (ECONNREFUSED), not accepted" "refused" \
	"$(run python3 "$T/portprobe.py" "$N" 8080)"
wait_grep "$T/audit.log" '"port":8080' || true
check "... audited as a blocked tcp packet naming the port" "1" "$(blocked_tcp "$N" 8080)"
check_has "... a deny for the blocked packet" '"decision":"deny","rule":null,"reason":"blocked-packet"' \
	"$(audit_match '"event":"blocked"' '"port":8080')"
check "... and nothing was decided for it as a connection" "0" \
	"$(audit_count '"event":"connect"' '"port":8080')"
check "the canary's port no rule allows: refused too" "refused" \
	"$(run python3 "$T/portprobe.py" "$WORLD_CANARY" 9999)"
check "... and the canary saw nothing" "$before" "$(world_canary_count)"
check "curl to a port no rule allows fails at once with 'connection refused' (exit 7)" "7" \
	"$(run sh -c 'curl -s -m 10 --noproxy "*" http://allowed.test:8080/ >/dev/null; echo $?')"
check "an allowed port is still captured and decided by its Host" "HTTP/1.0 200 OK" \
	"$(run python3 "$T/portprobe.py" "$N" 80 allowed.test | sed 's/HTTP\/1.1/HTTP\/1.0/')"
check "... a denied Host on it gets the gateway's 403" "HTTP/1.1 403 Forbidden" \
	"$(run python3 "$T/portprobe.py" "$N" 80 denied.test)"
check "a protocol: tcp port is captured (decided by address, relayed)" "closed" \
	"$(run python3 "$T/portprobe.py" "$N" 7)"
check_has "... audited as a decided connect" '"port":7' \
	"$(audit_match '"event":"connect"' '"port":7')"
check "DNS over TCP to anywhere still goes to the gateway" "1" \
	"$(run sh -c "python3 -c 'import socket; socket.create_connection((\"$WORLD_CANARY\", 53), timeout=5); print(1)'")"
check "... and the canary saw nothing" "$before" "$(world_canary_count)"

# ---- reloads: one sandbox, told when to go on through $T/w ----
rm -f "$T/w/ready" "$T/w/go" "$T/w/go2"
world_host_bg "$SLUICE" run --ro "$T" --rw "$T/w" --policy "$T/policy.yaml" --resolver "$N:53" \
	--audit "$T/audit.log" -- sh -c "
	w() { for i in \$(seq 200); do [ -e \$1 ] && return; sleep 0.05; done; }
	python3 $T/portprobe.py $N 8080 allowed.test >$T/w/1; touch $T/w/ready; w $T/w/go
	python3 $T/portprobe.py $N 8080 allowed.test >$T/w/2
	python3 $T/portprobe.py $N 8080 denied.test >$T/w/3
	python3 $T/portprobe.py $N 8081 allowed.test >$T/w/4; touch $T/w/ready2; w $T/w/go2
	python3 $T/portprobe.py $N 8080 allowed.test >$T/w/5
	python3 $T/portprobe.py $N 8081 allowed.test >$T/w/6" >"$T/reload.out" 2>&1
pid=$!
wait_for_file_long() { for _ in $(seq 200); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
wait_for_file_long "$T/w/ready"
check "before the reload, port 8080 is refused" "refused" "$(cat "$T/w/1")"
write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
    ports: [80, 443, 8080]
P
n=$(grep -c ': reloaded' "$T/reload.out")
kill -HUP "$pid"
for _ in $(seq 100); do [ "$(grep -c ': reloaded' "$T/reload.out")" -gt "$n" ] && break; sleep 0.05; done
touch "$T/w/go"
wait_for_file_long "$T/w/ready2"
check "after a reload that adds 8080: captured, decided, served by the origin" "HTTP/1.0 200 OK" \
	"$(cat "$T/w/2")"
check "... the origin on 8080 served it" "1" "$(grep -c '"GET / HTTP/1.1" 200' "$T/alt.log")"
check "... a denied Host on the new port gets the gateway's 403" "HTTP/1.1 403 Forbidden" \
	"$(cat "$T/w/3")"
check "... audited as a decided request on 8080" "1" \
	"$(audit_count '"host":"denied.test","port":8080' '"decision":"deny"')"
check "... a port still in no rule stays refused" "refused" "$(cat "$T/w/4")"
# Reloads that fail change nothing: an invalid policy, and a valid one
# (which would capture 8081) that the supervisor refuses after loading it
# (a secret not loaded at the start needs a restart).
hup_refused() {
	local n
	n=$(grep -c 'not reloaded' "$T/reload.out")
	kill -HUP "$pid"
	for _ in $(seq 100); do [ "$(grep -c 'not reloaded' "$T/reload.out")" -gt "$n" ] && return 0; sleep 0.05; done
	return 1
}
printf 'version: 1\nallow:\n  - host: https://allowed.test/\n' >"$T/policy.yaml"
hup_refused
check "... an invalid policy is not reloaded" "1" "$(grep -c 'not reloaded' "$T/reload.out")"
echo sk-new-secret >"$T/new.key"
chmod 600 "$T/new.key"
write_policy "$T/policy.yaml" <<P
version: 1
secrets:
  k: { file: $T/new.key }
allow:
  - host: allowed.test
    ports: [80, 443, 8080, 8081]
    inject: { header: x-api-key, secret: k }
P
hup_refused
check "... nor one with a new secret (refused after it loaded)" "2" "$(grep -c 'not reloaded' "$T/reload.out")"
touch "$T/w/go2"
wait "$pid"
check "a failed reload changes nothing: 8080 still captured and served" "HTTP/1.0 200 OK" \
	"$(cat "$T/w/5")"
check "... and 8081 still refused" "refused" "$(cat "$T/w/6")"

# ---- a reload that takes a port away, under a connection open on it ----
write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
P
rm -f "$T/w/ready" "$T/w/go"
world_host_bg "$SLUICE" run --ro "$T" --rw "$T/w" --policy "$T/policy.yaml" --resolver "$N:53" \
	--audit "$T/audit.log" -- python3 "$T/keepalive.py" "$N" 80 allowed.test "$T/w/ready" "$T/w/go" \
	>"$T/reload2.out" 2>&1
pid=$!
wait_for_file_long "$T/w/ready"
write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
    ports: [443]
P
n=$(grep -c ': reloaded' "$T/reload2.out")
kill -HUP "$pid"
for _ in $(seq 100); do [ "$(grep -c ': reloaded' "$T/reload2.out")" -gt "$n" ] && break; sleep 0.05; done
touch "$T/w/go"
wait "$pid"
check "a reload that drops port 80: the connection open on it is decided by the new policy (403), a new one refused at the SYN" \
	"HTTP/1.1 200 OK / HTTP/1.1 403 Forbidden / refused" "$(grep -v ': reloaded' "$T/reload2.out")"
check_has "... its second request audited as denied for its port" '"status":403,"decision":"deny","rule":null,"reason":"port"' \
	"$(audit_match '/keepalive' | tail -n 1)"
check "... the origin served only the first" "1" "$(grep -c 'GET /keepalive' "$T/origin.log")"

# ---- many ports: as many as are listed one by one (SL_NFT_MAX_CAPTURE_PORTS) ----
many_ports() { # N: a policy for allowed.test naming 80 and N - 1 ports from 2000 on
	{
		printf 'version: 1\nallow:\n  - host: allowed.test\n    ports: [80'
		for i in $(seq 2000 $((2000 + $1 - 2))); do printf ', %d' "$i"; done
		printf ']\n'
	} >"$T/policy.yaml"
	chmod 644 "$T/policy.yaml"
}
many_ports 1024
check "a policy naming 1024 ports: run starts, a listed port is captured and decided" \
	"HTTP/1.1 200 OK, closed, refused" \
	"$(run sh -c "python3 $T/portprobe.py $N 80 allowed.test; python3 $T/portprobe.py $N 3022; \
		python3 $T/portprobe.py $N 3023" | paste -sd, | sed 's/,/, /g')"
many_ports 2
mkdir -m 777 "$T/w3"
world_host_bg "$SLUICE" run --ro "$T" --rw "$T/w3" --policy "$T/policy.yaml" --resolver "$N:53" \
	--audit "$T/audit.log" -- sh -c "
	w() { for i in \$(seq 200); do [ -e \$1 ] && return; sleep 0.05; done; }
	python3 $T/portprobe.py $N 3022 >$T/w3/1; touch $T/w3/ready; w $T/w3/go
	python3 $T/portprobe.py $N 3022 >$T/w3/2" >"$T/reload3.out" 2>&1
pid=$!
wait_for_file_long "$T/w3/ready"
many_ports 1024
n=$(grep -c ': reloaded' "$T/reload3.out")
kill -HUP "$pid"
for _ in $(seq 100); do [ "$(grep -c ': reloaded' "$T/reload3.out")" -gt "$n" ] && break; sleep 0.05; done
touch "$T/w3/go"
wait "$pid"
check "a reload to 1024 ports: the new ports captured (accepted, then decided), no error" \
	"refused closed 0" "$(cat "$T/w3/1") $(cat "$T/w3/2") $(grep -c -i 'nftables' "$T/reload3.out")"
check "the canary saw nothing" "$before" "$(world_canary_count)"

finish
