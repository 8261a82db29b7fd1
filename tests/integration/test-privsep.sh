#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Privilege separation (issue #11): the code that parses the sandbox's
# bytes holds no power, and its death leaves the sandbox fenced.
#
# While `sluice run` serves a command, its gateway is a process of its own:
# the child of the run process whose comm is "sluice-gateway" (set with
# PR_SET_NAME; nothing else marks it). From outside, in /proc/PID:
#   - Uid neither root's nor the command's, CapEff/CapPrm/CapBnd 0,
#     NoNewPrivs 1, Seccomp 2 (a filter), its root the empty directory
#     /run/sluice/empty, and /proc/PID/status owned by root (it is not
#     dumpable); the secret's pages locked (VmLck), the secret (read from
#     sluice's environment) gone from its copy of the environment;
#   - requests through it still work: an allowed one reaches the origin
#     (200), a denied one gets 403, an inspected one gets the credential
#     injected (the origin saw the real key); a reload (SIGHUP) is taken.
# Then, with no hook in the product, gdb (as root) makes it execute ptrace(2),
# which its seccomp filter does not allow: it dies of SIGSYS, run ends the
# command and exits 125 saying so, and the sandbox stayed fenced all along:
# a command that kept trying the canary (directly, captured, and through the
# proxy's address) never reached it, and nothing is left behind (no nft
# table, no veth, no process in the sandbox's network namespace).
# `sluice attach`'s gateway: confined too; when it dies (SIGKILL here)
# attach detaches and exits 4, and the container gets its namespace back.
# Without --upstream-ca, an inspected origin verifies against the system's
# store (SSL_CERT_FILE here), loaded before confinement.
# Last, an empty directory that is not empty, or a link, is refused at start.
#
# Usage: test-privsep.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")
. "$here/lib/checks.sh"
needs_root test-privsep.sh ip nft nsenter python3 curl dnsmasq openssl gdb
[ -x "$SLUICE" ] || { echo "not ok - no sluice binary at $SLUICE"; exit 1; }
. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
C=$WORLD_CANARY
make_keys "$T/secrets" || { echo "not ok - could not make the keys"; exit 1; }
ORIGIN_OPENAI_KEY_FILE=$T/secrets/openai.key \
	world_services allowed.test="$N" denied.test="$N" api.openai.com="$N" ||
	{ echo "not ok - could not start the services"; exit 1; }
chmod 644 "$T/cert.pem"
mkdir -m 1777 "$T/w"
host_links0=$(ip -n "$WORLD_HOST" -o link | awk -F': ' '{print $2}' | sort | tr '\n' ' ')

write_policy "$T/policy.yaml" <<P
version: 1
secrets:
  openai: { env: SLUICE_PRIVSEP_KEY }
allow:
  - host: allowed.test
    ports: [80]
  - host: api.openai.com
    inject: { header: Authorization, prefix: "Bearer ", secret: openai }
P
# Inside: the requests the gateway must still serve, then tries at the
# canary until it is ended (bounded), one line per try: "I DIRECT PROXY"
# with the HTTP status each got (000: no answer, refused).
cat >"$T/agent.sh" <<SH
W=\$1
curl -s -m 10 -o /dev/null -w '%{http_code}' http://allowed.test/privsep-allowed >"\$W/allowed"
curl -s -m 10 -o /dev/null -w '%{http_code}' http://denied.test/privsep-denied >"\$W/denied"
curl -sS -m 10 -H "Authorization: Bearer wrong" -o /dev/null -w '%{http_code}' \
	https://api.openai.com/echo-headers?privsep >"\$W/inspected" 2>&1
touch "\$W/served"
i=0
while [ \$i -lt 3000 ]; do
	d=\$(curl -s -m 2 --noproxy '*' -o /dev/null -w '%{http_code}' http://$C/direct-\$i)
	p=\$(curl -s -m 2 -o /dev/null -w '%{http_code}' http://$C/proxy-\$i)
	echo "\$i \$d \$p" >>"\$W/tries"
	i=\$((i + 1))
done
SH
chmod 644 "$T/agent.sh"

# The key from sluice's environment (not a command line): it must not stay
# in the gateway's copy of that environment.
SLUICE_PRIVSEP_KEY=$openai_key \
	world_host_bg "$SLUICE" run --ro "$T" --rw "$T/w" --policy "$T/policy.yaml" --resolver "$N:53" \
	--upstream-ca "$T/cert.pem" --audit "$T/audit.log" -- sh "$T/agent.sh" "$T/w" \
	>"$T/run.out" 2>"$T/run.err"
run_pid=$!
world_kill_pids+=("$run_pid")
for _ in $(seq 300); do [ -e "$T/w/served" ] && break; sleep 0.1; done
[ -e "$T/w/served" ] || { notok "the command did not get going: $(cat "$T/run.err")"; finish; }

# The gateway: run's child named sluice-gateway; the command: the agent.
gw=
for p in /proc/[0-9]*; do
	[ "$(awk '/^PPid:/ { print $2 }' "$p/status" 2>/dev/null)" = "$run_pid" ] || continue
	[ "$(cat "$p/comm" 2>/dev/null)" = sluice-gateway ] && gw=${p#/proc/}
done
cmd=
for p in /proc/[0-9]*; do
	[ "$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" = "sh $T/agent.sh $T/w " ] && cmd=${p#/proc/}
done
[ -n "$gw" ] && [ -n "$cmd" ] || { notok "no gateway ($gw) or command ($cmd) found: $(cat "$T/run.err")"; finish; }
sandbox_ns=$(readlink "/proc/$cmd/ns/net")
echo "# gateway pid $gw, command pid $cmd, sandbox $sandbox_ns"
field() { awk -v f="$1:" '$1 == f { print $2; exit }' "/proc/$gw/status"; }
ids() { awk -v f="$2:" '$1 == f { print $2, $3, $4, $5; exit }' "/proc/$1/status"; }

gw_uid=$(field Uid)
check "the gateway is not root: its real, effective, saved and fs uid and gid are its own" \
	"$gw_uid $gw_uid $gw_uid $gw_uid yes" "$(ids "$gw" Uid) $([ "$gw_uid" -gt 0 ] && echo yes)"
check "... and not the command's ($(field Uid) vs $(ids "$cmd" Uid | cut -d' ' -f1))" yes \
	"$([ "$gw_uid" != "$(ids "$cmd" Uid | cut -d' ' -f1)" ] && echo yes)"
check "... its gid is not root's" yes "$([ "$(field Gid)" != 0 ] && echo yes)"
check "... no supplementary group" "" "$(awk '$1 == "Groups:" { $1 = ""; print }' "/proc/$gw/status" | tr -d ' ')"
check "CapEff, CapPrm, CapBnd are empty" "0000000000000000 0000000000000000 0000000000000000" \
	"$(field CapEff) $(field CapPrm) $(field CapBnd)"
check "NoNewPrivs 1" 1 "$(field NoNewPrivs)"
check "Seccomp 2 (a filter)" 2 "$(field Seccomp)"
check "its root is the empty directory" /run/sluice/empty "$(readlink "/proc/$gw/root")"
check "it is not dumpable: /proc/PID/status is root's, though the process is not" 0 \
	"$(stat -c %u "/proc/$gw/status")"

vmlck=$(awk '$1 == "VmLck:" { print $2 }' "/proc/$gw/status")
check "the secret's pages are locked in it again (VmLck $vmlck kB; locks do not survive fork)" yes \
	"$([ "${vmlck:-0}" -gt 0 ] && echo yes)"
check "the control: the key is in run's environment" yes \
	"$(has_key "$(tr '\0' '\n' <"/proc/$run_pid/environ")" && echo yes)"
check_nokey "... and not in the gateway's copy of it" "$(tr '\0' '\n' <"/proc/$gw/environ")"

check "an allowed request through it reaches the origin" \
	"200 1" "$(cat "$T/w/allowed") $(grep -c '^GET /privsep-allowed ' "$T/origin.log")"
check "a denied one gets 403 and reaches nothing" \
	"403 0" "$(cat "$T/w/denied") $(grep -c '/privsep-denied' "$T/origin.log")"
check "an inspected one gets its credential injected (the origin saw the real key)" \
	"200 GET /echo-headers?privsep host=api.openai.com auth=real" \
	"$(cat "$T/w/inspected") $(grep '^GET /echo-headers?privsep ' "$T/origin.log" | tail -n 1)"
for _ in $(seq 100); do [ "$(grep -c . "$T/w/tries" 2>/dev/null)" -ge 3 ] && break; sleep 0.1; done
check "the command is trying the canary, refused by the gateway (403 captured, 403 proxied)" \
	"403 403" "$(head -n 1 "$T/w/tries" | cut -d' ' -f2-)"

# A reload: the supervisor checks the file and hands its bytes over; the
# confined gateway parses them and decides by them from then on.
gwaddr=$(nsenter -t "$cmd" -n ip -o -4 route show default | awk '{ print $3; exit }')
check "the control: before the reload denied.test is refused" 403 \
	"$(nsenter -t "$cmd" -n curl -s -m 5 -o /dev/null -w '%{http_code}' -x "http://$gwaddr:3128" http://denied.test/before-reload)"
sed -i 's/^  - host: allowed.test$/  - host: denied.test\n    ports: [80]\n&/' "$T/policy.yaml"
kill -HUP "$run_pid"
for _ in $(seq 100); do grep -q 'reloaded' "$T/run.err" && break; sleep 0.05; done
check "SIGHUP: the gateway took the new policy" \
	"sluice run: $T/policy.yaml: reloaded 200" \
	"$(grep 'reloaded' "$T/run.err") $(nsenter -t "$cmd" -n curl -s -m 5 -o /dev/null -w '%{http_code}' -x "http://$gwaddr:3128" http://denied.test/after-reload)"
check "... and it is the same process, still confined" "sluice-gateway 2" \
	"$(cat "/proc/$gw/comm") $(field Seccomp)"

# ptrace(2) (101 on x86_64, 117 on arm64) from inside the gateway.
case $(uname -m) in aarch64) nr=117 ;; *) nr=101 ;; esac
gdb -p "$gw" -batch -ex "call (long)syscall($nr, 0, 0, 0, 0)" >"$T/gdb.out" 2>&1
rc=
for _ in $(seq 300); do
	kill -0 "$run_pid" 2>/dev/null || { wait "$run_pid"; rc=$?; break; }
	sleep 0.1
done
world_forget "$run_pid"
check "run ended the command and exited 125" 125 "$rc"
check_has "... saying the gateway died of SIGSYS" \
	"sluice run: the gateway (pid $gw) died (killed by signal SYS): ending the command (exit 125)" \
	"$(cat "$T/run.err")"
check "the gateway is gone" "" "$(cat "/proc/$gw/comm" 2>/dev/null)"
check "the command is gone" "" "$(tr '\0' ' ' 2>/dev/null <"/proc/$cmd/cmdline")"
echo "# $(grep -c . "$T/w/tries") tries at the canary; the last: $(tail -n 1 "$T/w/tries")"
check "every try was refused (403 by the gateway, or no answer once it was gone)" "" \
	"$(awk '!(($2 == "403" || $2 == "000") && ($3 == "403" || $3 == "000"))' "$T/w/tries")"
check "the canary saw nothing at all" 0 "$(world_canary_count)"
check "no origin saw the canary's paths" 0 "$(grep -c -e '/direct-' -e '/proxy-' "$T/origin.log")"

# Nothing left behind: no veth, address or route of the pool, no nft table,
# no process in the sandbox's network namespace.
links=$(ip -n "$WORLD_HOST" -o link | awk -F': ' '{print $2}' | sort | tr '\n' ' ')
in_ns=0
for p in /proc/[0-9]*; do [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$sandbox_ns" ] && in_ns=$((in_ns + 1)); done
check "nothing left behind: links, pool addresses, routes, nft tables, sandbox processes" \
	"$host_links0 0 0 0 0" \
	"$links $(ip -n "$WORLD_HOST" -o addr | grep -c '10\.23[12]\.') $(ip -n "$WORLD_HOST" route | grep -c '10\.23[12]\.') $(ip netns exec "$WORLD_HOST" nft list tables | grep -c .) $in_ns"

# Without --upstream-ca the origins are verified against the system's store,
# which the confined gateway can no longer open: it is loaded whole before.
# SSL_CERT_FILE (OpenSSL's own variable) stands in for the system's bundle.
out=$(SLUICE_PRIVSEP_KEY=$openai_key SSL_CERT_FILE=$T/cert.pem world_host "$SLUICE" run --ro "$T" \
	--policy "$T/policy.yaml" --resolver "$N:53" -- \
	curl -sS -m 10 -o /dev/null -w '%{http_code}' https://api.openai.com/echo-headers?system-store 2>&1)
check "the system's store (SSL_CERT_FILE) is loaded before confinement: an inspected request verifies" \
	"200 GET /echo-headers?system-store host=api.openai.com auth=real" \
	"$out $(grep '^GET /echo-headers?system-store ' "$T/origin.log" | tail -n 1)"

# `sluice attach`: its gateway is confined the same way; when it dies the
# container stays fenced until attach has put its routes back, and attach
# exits 4 saying so, leaving nothing of its own behind.
write_policy "$T/attach.yaml" <<P
version: 1
allow:
  - host: allowed.test
    ports: [80]
P
world_host_bg unshare --net sh -c \
	"ip link set lo up; exec setpriv --bounding-set -net_admin,-sys_admin,-sys_module,-sys_ptrace --inh-caps -net_admin,-sys_admin,-sys_module,-sys_ptrace sleep 120" \
	>/dev/null 2>&1
ctr=$!
world_kill_pids+=("$ctr")
# sleep runs once unshare has made the namespace and setpriv has executed it.
for _ in $(seq 100); do [ "$(cat "/proc/$ctr/comm" 2>/dev/null)" = sleep ] && break; sleep 0.05; done
world_host_bg "$SLUICE" attach --pid "$ctr" --policy "$T/attach.yaml" --resolver "$N:53" \
	2>"$T/attach.err"
att=$!
world_kill_pids+=("$att")
for _ in $(seq 200); do grep -q 'attached through' "$T/attach.err" 2>/dev/null && break; sleep 0.05; done
agw=
for p in /proc/[0-9]*; do
	[ "$(awk '/^PPid:/ { print $2 }' "$p/status" 2>/dev/null)" = "$att" ] &&
		[ "$(cat "$p/comm" 2>/dev/null)" = sluice-gateway ] && agw=${p#/proc/}
done
gwaddr=$(sed -n 's/.*gateway \([0-9.]*\) .*/\1/p' "$T/attach.err")
if [ -z "$agw" ] || [ -z "$gwaddr" ]; then
	notok "attach: no gateway found: $(cat "$T/attach.err")"
else
	check "attach: its gateway is confined too (uid not 0, CapEff 0, NoNewPrivs 1, Seccomp 2)" \
		"yes 0000000000000000 1 2" \
		"$([ "$(awk '$1 == "Uid:" { print $3 }' "/proc/$agw/status")" != 0 ] && echo yes) $(awk '$1 == "CapEff:" || $1 == "NoNewPrivs:" || $1 == "Seccomp:" { printf "%s ", $2 }' "/proc/$agw/status" | sed 's/ $//')"
	check "attach: the proxy serves the container" 200 \
		"$(nsenter -t "$ctr" -n curl -s -m 5 -o /dev/null -w '%{http_code}' -x "http://$gwaddr:3128" http://allowed.test/)"
	kill -KILL "$agw"
	rc=
	for _ in $(seq 300); do
		kill -0 "$att" 2>/dev/null || { wait "$att"; rc=$?; break; }
		sleep 0.1
	done
	world_forget "$att"
	check "attach: exits 4 when its gateway dies, saying so" \
		"4 sluice attach: the gateway (pid $agw) died (killed by signal KILL): detaching" \
		"$rc $(grep 'the gateway (pid' "$T/attach.err")"
	check "attach: the container got its namespace back (no sluice table, no veth)" "0 0" \
		"$(nsenter -t "$ctr" -n nft list tables | grep -c sluice) $(nsenter -t "$ctr" -n ip -o link | grep -c '@')"
	check "attach: the canary saw nothing" 0 "$(world_canary_count)"
fi

# The gateway's root must be empty and a directory: each refused at start,
# in a mount namespace of the test's own (the machine's /run/sluice is not
# touched), before the command runs.
out=$(world_host unshare -m --propagation private sh -c \
	"mount -t tmpfs -o mode=0555 slt-empty /run/sluice/empty && touch /run/sluice/empty/x &&
	exec '$SLUICE' run -- sh -c 'echo ran'" 2>&1)
check "a file in /run/sluice/empty: run refuses (125) and says why, the command never ran" \
	"125 sluice run: /run/sluice/empty: must be empty, holds 'x' (the gateway is chrooted there)" \
	"$? $out"
out=$(world_host unshare -m --propagation private sh -c \
	"mount -t tmpfs -o mode=0755 slt-run /run/sluice && ln -s /tmp /run/sluice/empty &&
	exec '$SLUICE' run -- sh -c 'echo ran'" 2>&1)
check "/run/sluice/empty a link: refused the same way" \
	"125 sluice run: /run/sluice/empty: not a directory (a link?): the gateway is chrooted there; remove it" \
	"$? $out"

finish
