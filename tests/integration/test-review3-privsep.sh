#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Review of issue #11: what the confined gateway of `sluice run` still holds
# that a gateway the sandbox compromised could use. Run from a terminal
# (script(1) gives it a pty, as an operator's shell would), with a variable
# in run's environment that is no secret of the policy's:
#   - no fd of the gateway is that terminal open for reading (read(2) is in
#     its allowlist: it could take the operator's keystrokes);
#   - its copy of the environment does not hold run's variables (only the
#     policy's secrets were wiped: an operator's other tokens stayed);
#   - its fds are only /dev/null, the audit log, sockets, its event loop's
#     own (eventpoll, eventfd, pipes) and write-only stdout/stderr: no
#     directory, no pidfd, no signalfd, no /run/sluice lock, no netlink
#     socket but the route socket's;
#   - the command cannot reach it: another pid namespace, another uid.
#
# Usage: test-review3-privsep.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")
. "$here/lib/checks.sh"
needs_root test-review3-privsep.sh ip nft nsenter python3 curl dnsmasq openssl script
. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
ORIGIN_OPENAI_KEY=sk-review3-secret-4711 world_services allowed.test="$N" || { echo "not ok - could not start the services"; exit 1; }
mkdir -m 1777 "$T/w"
write_policy "$T/policy.yaml" <<P
version: 1
allow:
  - host: allowed.test
P
cat >"$T/agent.sh" <<'A'
W=$1
curl -s -m 10 -o /dev/null -w '%{http_code}' http://allowed.test/review3 >"$W/allowed"
echo "$(id -u) $(readlink /proc/self/ns/pid)" >"$W/info"
touch "$W/served"
i=0
while [ $i -lt 600 ] && [ ! -e "$W/stop" ]; do sleep 0.1; i=$((i + 1)); done
A
chmod 644 "$T/agent.sh"

# An operator's token in run's environment, not named by the policy.
REVIEW3_OTHER_TOKEN=review3-operator-token-4711 world_host_bg script -qfec \
	"$SLUICE run --ro $T --rw $T/w --policy $T/policy.yaml --resolver $N:53 --audit $T/audit.log -- sh $T/agent.sh $T/w" \
	/dev/null >"$T/run.out" 2>"$T/run.err" </dev/null
script_pid=$!
world_kill_pids+=("$script_pid")
for _ in $(seq 300); do [ -e "$T/w/served" ] && break; sleep 0.1; done
[ -e "$T/w/served" ] || { notok "the command did not get going: $(cat "$T/run.out" "$T/run.err")"; finish; }
# The gateway: the process named sluice-gateway whose parent is a run of
# this test's command.
run_pid=
gw=
for p in /proc/[0-9]*; do
	[ "$(cat "$p/comm" 2>/dev/null)" = sluice-gateway ] || continue
	pp=$(awk '/^PPid:/ { print $2 }' "$p/status" 2>/dev/null)
	grep -qa "$T/agent.sh" "/proc/$pp/cmdline" 2>/dev/null || continue
	run_pid=$pp
	gw=${p#/proc/}
done
[ -n "$run_pid" ] && [ -n "$gw" ] || { notok "no run ($run_pid) or gateway ($gw)"; finish; }
echo "# run $run_pid, gateway $gw"
check "the command got through the gateway" 200 "$(cat "$T/w/allowed")"
check "the control: run's stderr is a terminal" yes \
	"$(case $(readlink /proc/$run_pid/fd/2) in /dev/pts/*) echo yes ;; esac)"

# fd: its target and its access mode (0 read, 1 write, 2 both).
mode() { awk '/^flags:/ { print substr($2, length($2)) % 4 }' "/proc/$gw/fdinfo/$1"; }
readable_tty=
other=
for f in /proc/$gw/fd/*; do
	n=${f##*/}
	t=$(readlink "$f")
	case $t in
	/dev/pts/* | /dev/tty*) [ "$(mode "$n")" != 1 ] && readable_tty="$readable_tty $n:$t" ;;
	/dev/null | "$T/audit.log" | socket:* | anon_inode:\[eventpoll\] | anon_inode:\[eventfd\] | pipe:*) ;;
	"$T/run.out" | "$T/run.err") [ "$(mode "$n")" = 1 ] || other="$other $n:$t(readable)" ;;
	*) other="$other $n:$t" ;;
	esac
done
check "no fd of the gateway is the operator's terminal open for reading" "" "$readable_tty"
check "... and it holds nothing else of the host's (directory, pidfd, signalfd, lock)" "" "$other"
nl=
for f in /proc/$gw/fd/*; do
	t=$(readlink "$f")
	case $t in socket:*) ;; *) continue ;; esac
	i=${t#socket:[}
	i=${i%]}
	p=$(awk -v i="$i" '$10 == i { print $2 }' "/proc/$gw/net/netlink")
	[ -n "$p" ] && [ "$p" != 0 ] && nl="$nl $p"
done
check "... no netlink socket but the route socket (protocol 0)" "" "$nl"
check_lacks "its copy of the environment holds none of run's variables" \
	review3-operator-token-4711 "$(tr '\0' '\n' <"/proc/$gw/environ")"
check "the control: run's does" yes \
	"$(tr '\0' '\n' <"/proc/$run_pid/environ" | grep -q review3-operator-token-4711 && echo yes)"
read -r cmd_uid cmd_pidns <"$T/w/info"
check "the command runs as another uid and in another pid namespace (cannot signal or trace it)" \
	"yes yes" "$([ "$cmd_uid" != "$(awk '/^Uid:/ { print $2 }' "/proc/$gw/status")" ] && echo yes) $(
		[ "$cmd_pidns" != "$(readlink "/proc/$gw/ns/pid")" ] && echo yes)"
touch "$T/w/stop"
for _ in $(seq 100); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done

# ---- sluice gateway standalone, started from a terminal ----
write_policy "$T/policy2.yaml" <<P
version: 1
secrets:
  key: { env: REVIEW3_KEY }
allow:
  - host: allowed.test
    inject: { header: Authorization, prefix: "Bearer ", secret: key }
P
mkdir -m 700 "$T/ca"
# Started with an fd it did not ask for (a launcher's leak: here a file of
# a directory only root may write, open for writing, as fd 7).
mkdir -m 700 "$T/rootonly"
REVIEW3_KEY=sk-review3-secret-4711 world_host_bg script -qfec \
	"exec 7>>$T/rootonly/leaked; $SLUICE gateway --policy $T/policy2.yaml --listen 203.0.113.1:3128 --resolver $N:53 --audit $T/audit2.log --ca-dir $T/ca --upstream-ca $T/cert.pem" \
	/dev/null >"$T/gw.log" 2>&1 </dev/null
world_kill_pids+=("$!")
wait_grep "$T/gw.log" "proxy on" || notok "the gateway says it serves: $(cat "$T/gw.log")"
gw=
for p in /proc/[0-9]*; do
	[ "$(cat "$p/comm" 2>/dev/null)" = sluice ] && grep -qa "$T/policy2.yaml" "$p/cmdline" 2>/dev/null &&
		[ "$(awk '/^Uid:/ { print $2 }' "$p/status")" != 0 ] && gw=${p#/proc/}
done
[ -n "$gw" ] || { notok "no confined sluice gateway found: $(cat "$T/gw.log")"; finish; }
# script(1)'s child, in a session of its own: killing script leaves it
# running (its reader ends with it).
world_kill_pids+=("$gw")
echo "# sluice gateway $gw"
readable_tty=
other=
for f in /proc/$gw/fd/*; do
	n=${f##*/}
	t=$(readlink "$f")
	case $t in
	/dev/pts/*) [ "$n" != 0 ] && [ "$(mode "$n")" = 1 ] || readable_tty="$readable_tty $n:$t" ;;
	/dev/null | "$T/audit2.log" | socket:* | anon_inode:* | pipe:*) ;;
	*) other="$other $n:$t" ;;
	esac
done
check "standalone: no fd of the confined gateway is the terminal open for reading (stdin neither)" \
	"" "$readable_tty"
check "... and no file of /run/sluice (its uid's lock: the reader holds it), nor one it inherited" \
	"" "$other"
check_lacks "... its copy of the environment no longer holds the secret" sk-review3-secret-4711 \
	"$(tr '\0' '\n' <"/proc/$gw/environ")"
check "the gateway serves (it injects: the origin saw the key)" "200 auth=real" \
	"$(world_host curl -s -m 10 -o /dev/null -w '%{http_code}' -x http://203.0.113.1:3128 \
		--cacert "$T/ca/ca.crt" https://allowed.test/echo-headers?review3) $(grep -o 'echo-headers?review3 .*' "$T/origin.log" | grep -o 'auth=[a-z]*' | tail -1)"
finish
