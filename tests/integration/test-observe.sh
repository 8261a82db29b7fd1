#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Observe, then learn (docs/observe.md). An agent runs under `sluice run
# --observe` and asks for what its policy allows, what no rule names, what
# a deny rule refuses, and methods and paths an inspected rule does not
# name: each arrives at the origin (its log says so) and is audited
# observe-deny with the rule that would have decided. What must not relax
# is checked from outside the gateway: a host observed gets no secret (the
# origin's log of credentials), the agent's own key is still dropped on a
# host whose rule injects, SSRF is still refused (decision deny), and a
# packet around the gateway still never reaches the canary. Then `sluice
# learn` turns the audit log into a policy that `sluice check` accepts, and
# the same agent under it in enforce mode gets everything with no deny; a
# hostile audit log cannot inject YAML. Then `sluice attach --observe` on a
# container's namespace, and `sluice gateway` reloading into observe mode
# and out of it. About 25 s.
#
# Usage: test-observe.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
# shellcheck source-path=SCRIPTDIR
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-observe.sh ip nft nsenter python3 curl dnsmasq openssl getent

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR

make_keys "$T/secrets" || { echo "not ok - could not make the keys"; exit 1; }
mkdir -m 1777 "$T/work"
ORIGIN_ANTHROPIC_KEY_FILE=$T/secrets/anthropic.key \
	world_services api.anthropic.com="$N" free.test="$N" denied.test="$N" gist.test="$N" \
	xn--bcher-kva.test="$N" \
	meta.test=169.254.169.254 || { echo "not ok - services"; exit 1; }
chmod 644 "$T/cert.pem"

write_policy "$T/policy.yaml" <<P
version: 1
secrets:
  anthropic: { file: $T/secrets/anthropic.key }
allow:
  - host: api.anthropic.com
    methods: [POST]
    paths: ["/v1/messages"]
    inject: { header: x-api-key, secret: anthropic, placeholder_env: ANTHROPIC_API_KEY }
  - host: free.test
deny:
  - host: gist.test
P
# The same without its deny rule: what the operator keeps once observe
# showed that the agent needs gist.test after all.
sed '/^deny:/,$d' "$T/policy.yaml" | write_policy "$T/policy-nodeny.yaml"

# The agent: each line "NAME STATUS". With "all", also what must stay
# refused in any mode (SSRF) and a packet around the gateway.
cat >"$T/agent.sh" <<'SH'
#!/bin/bash
code() { curl -s -o /dev/null -w '%{http_code}' -m 10 "$@"; }
msg='{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}'
echo "A1 $(code -X POST -H "x-api-key: $ANTHROPIC_API_KEY" -H 'anthropic-version: 2023-06-01' \
	-H 'content-type: application/json' -d "$msg" https://api.anthropic.com/v1/messages)"
echo "A2 $(code -H 'x-api-key: sk-agent-own-key' https://api.anthropic.com/v1/models/claude-x)"
echo "A3 $(code -X POST -d x https://api.anthropic.com/v1/messages/msg_01XFDUDYJgAACzvnptvVoYEL/cancel)"
echo "A4 $(code -X POST -d x https://api.anthropic.com/v1/messages/msg_01AbCdEfGhIjKlMnOpQrStUv/cancel)"
echo "F1 $(code http://free.test/ok)"
echo "D1 $(code --cacert "$1/cert.pem" https://denied.test/tls/1)"
echo "D2 $(code -H "x-api-key: $ANTHROPIC_API_KEY" http://denied.test/echo-headers)"
echo "D3 $(code http://denied.test/plain/a)"
echo "G1 $(code http://gist.test/g)"
echo "N1 $(getent ahostsv4 denied.test | awk 'NR == 1 { print $1 }')"
if [ "$2" = all ]; then
	echo "S1 $(code http://meta.test/latest/meta-data)"
	echo "S2 $(code http://169.254.169.254/latest/meta-data)"
	# The gateway's own checks are not the rules': still refused (an
	# ambiguous path where a rule for the host names paths).
	echo "P1 $(code -X GET -d body http://denied.test/get-with-body)"
	echo "P2 $(code --path-as-is 'https://api.anthropic.com/v1/%2e%2e/p2')"
	echo "P3 $(code -X POST -H 'X-HTTP-Method-Override: DELETE' -d x \
		https://api.anthropic.com/v1/messages/override)"
	python3 -c 'import socket
for a in ("203.0.113.99", "2001:db8::99"):
    try:
        s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b"x" * 32, (a, 9999))
    except OSError:
        pass'
	echo "B1 sent"
	# A port no rule allows: captured all the same (no SYN reject in
	# observe mode), so the gateway sees it. Nothing listens there.
	python3 -c 'import socket
try:
    socket.create_connection(("203.0.113.2", 8080), 3).close()
    print("C1 captured")
except OSError as e:
    print("C1 refused", e)'

fi
SH
chmod 755 "$T/agent.sh"

run() { # run POLICY AUDIT ARGS... -- the agent
	local pol=$1 audit=$2
	shift 2
	world_host "$SLUICE" run --ro "$T" --rw "$T/work" --policy "$pol" --resolver "$N:53" \
		--upstream-ca "$T/cert.pem" --audit "$audit" "$@"
}
served() { grep -c -- "^$1 $2 host=$3 " "$T/origin.log"; }

# ---- observe ----
out=$(run "$T/policy.yaml" "$T/audit.log" --observe -- env HOME="$T/work" "$T/agent.sh" "$T" all \
	2>"$T/run.err")
check "observe: every request the rules deny is let through (200), SSRF is not (403)" \
	"A1 200 A2 200 A3 200 A4 200 F1 200 D1 200 D2 200 D3 200 G1 200 N1 $N S1 403 S2 403 P1 400 P2 403 P3 400 B1 sent C1 captured" \
	"$(tr '\n' ' ' <<<"$out" | sed 's/ $//')"
check_has "the start-up banner says so, loudly" "OBSERVE MODE: the policy's rules are NOT enforced" \
	"$(cat "$T/run.err")"
check "... the origin's log shows the denied requests arrived" "1 1 1 1 1 1" \
	"$(served GET /v1/models/claude-x api.anthropic.com) $(served GET /tls/1 denied.test) \
$(served GET /plain/a denied.test) $(served GET /g gist.test) \
$(served POST /v1/messages/msg_01XFDUDYJgAACzvnptvVoYEL/cancel api.anthropic.com) \
$(served GET /echo-headers denied.test)" 
check "... the allowed request got the secret" "1" \
	"$(grep -c '^POST /v1/messages host=api.anthropic.com auth=real$' "$T/origin.log")"
check "a host observed gets no secret: only the placeholder the agent sent reached it" \
	"1 0" "$(grep -c '^GET /echo-headers host=denied.test auth=wrong$' "$T/origin.log") \
$(grep -c 'host=denied.test auth=real' "$T/origin.log")"
check "a request observed on a host whose rule injects: no secret, and the agent's own key dropped" \
	"1" "$(grep -c '^GET /v1/models/claude-x host=api.anthropic.com auth=none$' "$T/origin.log")"
check_nokey "the origin's log holds no key" "$(cat "$T/origin.log")"
check "the audit: observe-deny, no rule (default), reason no-rule" "1" \
	"$(audit_count '"path":"/plain/a"' '"decision":"observe-deny"' '"rule":"default"' '"reason":"no-rule"')"
check "the audit: observe-deny, the deny rule that would have decided" "1" \
	"$(audit_count '"host":"gist.test"' '"decision":"observe-deny"' '"rule":"deny[1]"' '"reason":"deny-rule"')"
check "the audit: a method and a path the inspected rule does not name" "1 2" \
	"$(audit_count '"path":"/v1/models/claude-x"' '"decision":"observe-deny"' '"reason":"method"') \
$(audit_count '/cancel"' '"decision":"observe-deny"' '"reason":"path"')"
check "the audit: a CONNECT to a host no rule names" "1" \
	"$(audit_count '"event":"connect"' '"host":"denied.test"' '"decision":"observe-deny"')"
check "the audit: the sandbox's DNS answered a name no rule allows, observe-deny" "yes" \
	"$([ "$(audit_count '"event":"dns"' '"host":"denied.test"' '"decision":"observe-deny"')" -ge 1 ] && echo yes)"
check "SSRF: refused, decision deny, reason private-address (by name and by address)" "2 0" \
	"$(audit_count '"decision":"deny"' '"reason":"private-address"') \
$(audit_count '169.254' '"decision":"observe-deny"')"
check "protocol checks: a GET with a body, a dot segment, a method override: refused, decision deny" \
	"1 1 1 0 0 0" "$(audit_count '/get-with-body"' '"decision":"deny"' '"reason":"bad-request"') \
$(audit_count '"decision":"deny"' '"reason":"invalid-path"') \
$(audit_count '/override"' '"decision":"deny"' '"reason":"method-override"') \
$(grep -c 'get-with-body' "$T/origin.log") $(grep -c 'p2 host' "$T/origin.log") \
$(grep -c '/override' "$T/origin.log")"
check "the allowed ones: decision allow" "2" \
	"$(audit_count '"decision":"allow"' '"event":"http"' '"reason":"allowed"')"
check "a packet around the gateway (UDP, IPv4 and IPv6) never reached the canary" 0 \
	"$(world_canary_count)"

# ---- the DNS budget still bounds what the agent can send as names ----
# In observe mode every name is the agent's: new names under one suffix
# are budgeted (here 3 a minute), whichever way they came.
{ cat "$T/policy.yaml"; printf 'dns:\n  new_names_per_minute: 3\n'; } | write_policy "$T/budget.yaml"
run "$T/budget.yaml" "$T/audit-b.log" --observe -- sh -c \
	'for i in 1 2 3 4 5 6 7 8; do getent ahostsv4 "x$i-q.denied.test" >/dev/null; done; \
	 curl -s -o /dev/null -m 5 http://x9-q.denied.test/b' 2>/dev/null
check "observe: 3 new names under denied.test went upstream, not 9" "3" \
	"$(grep -oE 'query\[A\] x[0-9]-q\.denied\.test' "$T/dns.log" | sort -u | wc -l)"
check "... the refusal is audited once, saying observe mode" "1" \
	"$(grep -c '"reason":"dns-budget: observe mode: 3 new names under denied.test' "$T/audit-b.log")"

# ---- observe without a policy: a Host in Unicode ----
# Every request is let through and logged, a host named in UTF-8 too
# (llhttp passes such a Host header): its gateway loads libidn2 before it
# is confined, as one with a policy file does, or the name would be
# refused as invalid.
out=$(world_host "$SLUICE" run --observe --resolver "$N:53" --audit "$T/audit-u.log" -- \
	python3 -c 'import socket, sys
s = socket.create_connection((sys.argv[1], 80), timeout=10)
s.sendall("GET /idn-observe HTTP/1.1\r\nHost: bücher.test\r\nConnection: close\r\n\r\n".encode())
print(s.recv(200).split(b"\r\n")[0].decode("latin-1"))' "$N" 2>"$T/run-u.err")
check_has "observe, no policy: a request whose Host is bücher.test is let through" " 200" "$out"
check_has "... to xn--bcher-kva.test (the origin served it)" "GET /idn-observe" "$(cat "$T/origin.log")"
check_has "... and audited under its A-label" '"host":"xn--bcher-kva.test"' \
	"$(cat "$T/audit-u.log" 2>/dev/null)"

# ---- learn ----
world_host "$SLUICE" learn "$T/audit.log" >"$T/learned.yaml" 2>"$T/learn.err"
check "sluice learn exits 0" 0 $?
chmod 644 "$T/learned.yaml"
world_host "$SLUICE" check "$T/learned.yaml" >/dev/null 2>&1
check "... and sluice check accepts what it printed" 0 $?
learned=$(cat "$T/learned.yaml")
check_has "... a rule for the host no rule named" 'host: "denied.test"' "$learned"
check_has "... the message IDs collapsed under one prefix" '"/v1/messages/*"  # 2' "$learned"
check_has "... SSRF refusals skipped, and said" "2 requests refused as SSRF" "$learned"
check_lacks "... no rule for the metadata address" "169.254" "$learned"
check_lacks "... nor for the name that resolved to it" "meta.test" "$learned"
check_lacks "... and no private_addresses key" "private_addresses:" "$learned"
world_host "$SLUICE" learn "$T/audit.log" --policy "$T/policy.yaml" >"$T/learned-base.yaml" 2>>"$T/learn.err"
check "sluice learn --policy BASE exits 0" 0 $?
chmod 644 "$T/learned-base.yaml"
check_has "... BASE's inject is kept" "inject: {header: x-api-key, secret: anthropic" \
	"$(cat "$T/learned-base.yaml")"
check_has "... its deny rule too (an allow rule would not beat it: skipped, said)" \
	"a deny rule of the base policy refuses" "$(cat "$T/learned-base.yaml")"

# ---- enforce, with what was learned ----
world_host "$SLUICE" learn "$T/audit.log" --policy "$T/policy-nodeny.yaml" >"$T/enforce.yaml" \
	2>>"$T/learn.err"
check "sluice learn --policy BASE (without the deny rule) exits 0" 0 $?
chmod 644 "$T/enforce.yaml"
n_real=$(grep -c '^POST /v1/messages host=api.anthropic.com auth=real$' "$T/origin.log")
out=$(run "$T/enforce.yaml" "$T/audit2.log" -- env HOME="$T/work" "$T/agent.sh" "$T" again \
	2>"$T/run2.err")
check "enforce with the learned policy: the agent gets everything it needed" \
	"A1 200 A2 200 A3 200 A4 200 F1 200 D1 200 D2 200 D3 200 G1 200 N1 $N" \
	"$(tr '\n' ' ' <<<"$out" | sed 's/ $//')"
check_lacks "... no observe banner" "OBSERVE" "$(cat "$T/run2.err")"
check "... with no deny and no observe-deny in its audit log" "0 0 yes" \
	"$(grep -c '"decision":"deny"' "$T/audit2.log") $(grep -c 'observe-deny' "$T/audit2.log") \
$([ "$(grep -c '"decision":"allow"' "$T/audit2.log")" -ge 10 ] && echo yes)"
check "... and the injected secret still where BASE put it" "$((n_real + 1))" \
	"$(grep -c '^POST /v1/messages host=api.anthropic.com auth=real$' "$T/origin.log")"

# ---- a hostile audit log ----
cp "$T/audit.log" "$T/hostile.log"
cat >>"$T/hostile.log" <<'EOF'
{"event":"http","method":"GET","host":"evil.test\"\n  - host: \"*.com","port":80,"path":"/","decision":"observe-deny"}
{"event":"connect","host":"x.test\nprivate_addresses: [0.0.0.0/0]","port":443,"decision":"observe-deny"}
{"event":"http","method":"GET","host":"free.test","port":80,"path":"/p\"\nprivate_addresses: [0.0.0.0/0]\n#","decision":"observe-deny"}
{"event":"http","method":"GET","host":"free.test","port":80,"path":"/q#x: y","decision":"observe-deny"}
{"event":"http","method":"GET","host":"free.test","port":80,"path":"/k:v'w\"z","decision":"observe-deny"}
{"event":"connect","host":"a.com","port":443,"decision":"observe-deny"}
{"event":"connect","host":"b.com","port":443,"decision":"observe-deny"}
{"event":"connect","host":"c.com","port":443,"decision":"observe-deny"}
{"event":"connect","host":"a.co.uk","port":443,"decision":"observe-deny"}
{"event":"connect","host":"b.co.uk","port":443,"decision":"observe-deny"}
{"event":"connect","host":"c.co.uk","port":443,"decision":"observe-deny"}
{"event":"connect","host":"10.9.8.7","port":443,"decision":"observe-deny"}
{"event":"http","host":"a","host":"b"}
not json at all
EOF
world_host "$SLUICE" learn "$T/hostile.log" >"$T/hostile.yaml" 2>"$T/hostile.err"
check "a hostile log: sluice learn exits 0" 0 $?
chmod 644 "$T/hostile.yaml"
world_host "$SLUICE" check "$T/hostile.yaml" >"$T/hostile.check" 2>&1
check "... sluice check accepts what it printed" 0 $?
hostile=$(cat "$T/hostile.yaml")
check_lacks "... no key was injected (private_addresses)" "private_addresses:" "$hostile"
check_lacks "... no *.com wildcard" '"*.com"' "$hostile"
check_lacks "... no *.co.uk wildcard" '"*.co.uk"' "$hostile"
check_has "... sluice check: no private range allowed" "private_addresses: deny" \
	"$(cat "$T/hostile.check")"
check_has "... the quoted path is one escaped string" "\"/k:v'w\\\"z\"" "$hostile"
check_has "... a private address is said, not allowed silently" "NOTE: 10.9.8.7 is a special address" \
	"$hostile"
check_has "... malformed lines are named by number on stderr" \
	"hostile.log:$(($(wc -l <"$T/hostile.log") - 1)): skipped: a repeated key" "$(cat "$T/hostile.err")"

# ---- sluice run: SIGHUP into observe mode and out of it ----
write_policy "$T/rl.yaml" <<P
version: 1
allow:
  - host: free.test
P
cat >"$T/rl-agent.sh" <<'SH'
#!/bin/bash
# rl-agent.sh DIR: a request, then wait for DIR/goN, three times.
for i in 1 2 3; do
	c=$(curl -s -o /dev/null -w '%{http_code}' -m 5 "http://denied.test/rl-$i")
	echo "$c" >"$1/step$i"
	[ "$i" = 3 ] && break
	for _ in $(seq 200); do [ -e "$1/go$i" ] && break; sleep 0.05; done
done
SH
chmod 755 "$T/rl-agent.sh"
world_host_bg "$SLUICE" run --ro "$T" --rw "$T/work" --policy "$T/rl.yaml" --resolver "$N:53" \
	--audit "$T/audit-rl.log" -- "$T/rl-agent.sh" "$T/work" >/dev/null 2>"$T/rl.err"
rl_pid=$!
world_pids+=("$rl_pid")
rl_reload() { # rl_reload N: SIGHUP, wait for the Nth answer, let the agent go on
	kill -HUP "$rl_pid"
	for _ in $(seq 100); do [ "$(grep -c ': reloaded' "$T/rl.err")" -ge "$1" ] && break; sleep 0.05; done
	touch "$T/work/go$1"
}
wait_grep "$T/work/step1" "" || true
printf 'mode: observe\n' >>"$T/rl.yaml"
rl_reload 1
wait_grep "$T/work/step2" "" || true
sed -i '/^mode:/d' "$T/rl.yaml"
rl_reload 2
for _ in $(seq 200); do kill -0 "$rl_pid" 2>/dev/null || break; sleep 0.05; done
world_forget "$rl_pid"
check "run: enforce, SIGHUP into observe mode, SIGHUP out of it: 403 200 403" "403 200 403" \
	"$(cat "$T/work/step1" "$T/work/step2" "$T/work/step3" 2>/dev/null | tr '\n' ' ' | sed 's/ $//')"
check "... each reload says its mode, the one into observe mode with the banner" "1 1 1" \
	"$(grep -c 'rl.yaml: reloaded (observe mode)' "$T/rl.err") \
$(grep -c 'rl.yaml: reloaded (enforce mode)' "$T/rl.err") $(grep -c 'OBSERVE MODE' "$T/rl.err")"

# With --observe, every policy reloaded is observed, whatever it says.
rm -f "$T/work"/step* "$T/work"/go* "$T/rl.err"
world_host_bg "$SLUICE" run --observe --ro "$T" --rw "$T/work" --policy "$T/rl.yaml" \
	--resolver "$N:53" --audit "$T/audit-rl2.log" -- "$T/rl-agent.sh" "$T/work" \
	>/dev/null 2>"$T/rl.err"
rl_pid=$!
world_pids+=("$rl_pid")
wait_grep "$T/work/step1" "" || true
rl_reload 1
wait_grep "$T/work/step2" "" || true
rl_reload 2
for _ in $(seq 200); do kill -0 "$rl_pid" 2>/dev/null || break; sleep 0.05; done
world_forget "$rl_pid"
check "run --observe: still observed after two reloads of an enforce-mode file: 200 200 200" \
	"200 200 200 2" "$(cat "$T/work/step1" "$T/work/step2" "$T/work/step3" 2>/dev/null |
	tr '\n' ' ')$(grep -c 'rl.yaml: reloaded (observe mode)' "$T/rl.err")"

# ---- sluice attach --observe: a container's namespace ----
host_ns=$(world_host readlink /proc/self/ns/net)
# Without the capabilities attach refuses a container for (afb3478).
world_host_bg unshare --net sh -c "ip link set lo up; exec setpriv \
	--bounding-set -net_admin,-sys_admin,-sys_module,-sys_ptrace \
	--inh-caps -net_admin,-sys_admin,-sys_module,-sys_ptrace sleep 300" >/dev/null 2>&1
c_pid=$!
world_pids+=("$c_pid")
for _ in $(seq 100); do
	[ "$(readlink "/proc/$c_pid/ns/net" 2>/dev/null)" != "$host_ns" ] &&
		[ "$(cat "/proc/$c_pid/comm" 2>/dev/null)" = sleep ] && break
	sleep 0.05
done
world_host_bg "$SLUICE" attach --pid "$c_pid" --policy "$T/policy.yaml" --resolver "$N:53" \
	--upstream-ca "$T/cert.pem" --audit "$T/audit-a.log" --observe 2>"$T/attach.err"
a_pid=$!
world_pids+=("$a_pid")
wait_grep "$T/attach.err" "attached through" || notok "attach did not attach: $(cat "$T/attach.err")"
check_has "attach --observe: the banner" "OBSERVE MODE" "$(cat "$T/attach.err")"
agw=$(sed -n 's/.*gateway \([0-9.]*\) .*/\1/p' "$T/attach.err")
inside() { local pid=$1; shift; nsenter -t "$pid" -n -- "$@"; }
out=$(inside "$c_pid" curl -s -m 5 -o /dev/null -w '%{http_code}' -x "http://$agw:3128" \
	http://denied.test/attach-1)
wait_grep "$T/audit-a.log" '"path":"/attach-1"' # written as the exchange ends
check "attach --observe: a host no rule names goes (200), audited observe-deny" "200 1" \
	"$out $(grep -c '"path":"/attach-1".*"decision":"observe-deny"' "$T/audit-a.log")"
inside "$c_pid" python3 -c 'import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("203.0.113.99", 9999))' 2>/dev/null
check "... and a packet around its gateway never reached the canary" 0 "$(world_canary_count)"
kill -TERM "$a_pid"
wait "$a_pid" 2>/dev/null
world_forget "$a_pid"

# ---- reload into observe mode and out of it (sluice gateway) ----
GW=203.0.113.1:3128
write_policy "$T/gw.yaml" <<P
version: 1
allow:
  - host: free.test
P
world_host_bg "$SLUICE" gateway --policy "$T/gw.yaml" --listen $GW --resolver "$N:53" \
	--audit "$T/gw-audit.log" >>"$T/gw.log" 2>&1
gw_pid=$!
world_pids+=("$gw_pid")
for _ in $(seq 50); do
	world_host "$PY" -c "import socket; socket.create_connection(('203.0.113.1', 3128), 1)" \
		2>/dev/null && break
	sleep 0.1
done
gcode() { world_host curl -s -m 10 -o /dev/null -w '%{http_code}' -x "http://$GW" "$@"; }
check "enforce: a host no rule names is refused (403)" "403" "$(gcode http://denied.test/r1)"
printf 'mode: observe\n' >>"$T/gw.yaml"
gw_reload "$gw_pid" "$T/gw.log"
check_has "reload into observe mode: said, with the banner" "reloaded (observe mode)" "$(cat "$T/gw.log")"
out=$(gcode http://denied.test/r2)
wait_grep "$T/gw-audit.log" '"path":"/r2"'
check "... the same request now goes (200), audited observe-deny" "200 1" \
	"$out $(grep -c '"path":"/r2".*"decision":"observe-deny"' "$T/gw-audit.log")"
# A tunnel observe mode let through (TLS to a host no rule names, relayed
# opaque: no later request of it is decided) must not outlive observe
# mode: the agent opens it in time and keeps it for when the rules are
# enforced. It sends /tun-1, waits for the reload, then /tun-2.
rm -f "$T/tun.go"
world_host "$PY" - "$T/cert.pem" "$T/tun.go" >"$T/tun.out" 2>&1 <<'PY' &
import os, socket, ssl, sys, time
s = socket.create_connection(("203.0.113.1", 3128), 5)
s.sendall(b"CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    d = s.recv(1)
    if not d:
        raise SystemExit("closed during CONNECT: %r" % head)
    head += d
print(head.split(b"\r\n")[0].decode(), flush=True)
t = ssl.create_default_context(cafile=sys.argv[1]).wrap_socket(s, server_hostname="denied.test")
t.settimeout(5)
def get(path):
    try:
        t.sendall(b"GET %s HTTP/1.1\r\nHost: denied.test\r\n\r\n" % path.encode())
        r = b""
        while b"\r\n\r\n" not in r:
            k = t.recv(4096)
            if not k:
                return "closed"
            r += k
        head, body = r.split(b"\r\n\r\n", 1)
        n = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
             if l.lower().startswith(b"content-length:")]
        while len(body) < (n[0] if n else 0):
            k = t.recv(4096)
            if not k:
                break
            body += k
        return head.split(b"\r\n")[0].decode()
    except (OSError, ssl.SSLError) as e:
        return "closed"
print(get("/tun-1"), flush=True)
for _ in range(200):
    if os.path.exists(sys.argv[2]):
        break
    time.sleep(0.05)
print(get("/tun-2"), flush=True)
PY
tun_pid=$!
# The client's answer to /tun-1, not the origin's log line: the origin logs
# before it answers, and a reload in between closes the tunnel under it.
for _ in $(seq 200); do [ "$(grep -c . "$T/tun.out" 2>/dev/null)" -ge 2 ] && break; sleep 0.05; done
sed -i '/^mode:/d' "$T/gw.yaml"
gw_reload "$gw_pid" "$T/gw.log"
check_has "reload out of observe mode: said" "reloaded (enforce mode)" "$(tail -n 1 "$T/gw.log")"
touch "$T/tun.go"
wait "$tun_pid"
check "... a tunnel observed before it is closed: the origin saw /tun-1, not /tun-2" \
	"HTTP/1.1 200 Connection established|HTTP/1.1 200 OK|closed 1 0" \
	"$(tr '\n' '|' <"$T/tun.out" | sed 's/|$//') $(grep -c '^GET /tun-1' "$T/origin.log") \
$(grep -c '^GET /tun-2' "$T/origin.log")"
check "... and it is refused again (403)" "403 0" "$(gcode http://denied.test/r3) $(served GET /r3 denied.test)"
kill -TERM "$gw_pid"
wait "$gw_pid" 2>/dev/null
world_forget "$gw_pid"
# ---- the audit log still fails closed ----
# `sluice gateway --observe`, its audit log on a tmpfs of one page (in a
# mount namespace of its own): once full, nothing more is relayed.
mkdir "$T/aud"
world_gateway_up "$T/fc.err" 3129 unshare -m --propagation private sh -c \
	"mount -t tmpfs -o size=4k slt-obs-audit '$T/aud' && exec '$SLUICE' gateway --observe \
	--policy '$T/gw.yaml' --listen 127.0.0.1:3129 --resolver '$N:53' --audit '$T/aud/audit.log' \
	>'$T/fc.out'"
fc_pid=$world_gw_pid
world_kill_pids+=("$fc_pid")
fcurl() { world_host curl -s -m 5 -o /dev/null -w '%{http_code}' -x http://127.0.0.1:3129 "$@"; }
relayed=0 out=200
for _ in $(seq 100); do
	out=$(fcurl http://denied.test/fill)
	[ "$out" = 200 ] || break
	relayed=$((relayed + 1))
done
echo "# $relayed observed requests filled the audit log"
check "observe: once the audit log is full, a request is closed, not relayed" "000" "$out"
check "... the gateway said why" "1" "$(grep -c 'cannot write the audit log' "$T/fc.err")"
check "... and the origin saw no more than were audited" "$relayed" \
	"$(grep -c '^GET /fill host=denied.test' "$T/origin.log")"
check "... an observed request after it is not relayed either" "000 0" \
	"$(fcurl http://denied.test/after-full) $(grep -c '/after-full' "$T/origin.log")"
kill -TERM "$fc_pid"
for _ in $(seq 100); do kill -0 "$fc_pid" 2>/dev/null || break; sleep 0.1; done

# A sanitizer build reports on stderr (at exit, for leaks).
check "no sanitizer report from sluice (run, attach, gateway, learn)" "0" \
	"$(cat "$T"/*.err "$T/gw.log" | grep -cE 'Sanitizer|runtime error:')"
finish
