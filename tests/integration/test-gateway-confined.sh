#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `sluice gateway` confines itself before it serves (docs/gateway.md, "What
# the process may do"): what the kernel says of the serving process
# (/proc/PID/status), and that it still does its whole job so confined:
# plain and inspected requests, allowed and denied, a reload of a policy
# replaced by mv, the audit log's rotation, a clean exit that releases its
# uid. Then the same as a named user (--gateway-user) and as an
# unprivileged one.
#
# Usage: test-gateway-confined.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-gateway-confined.sh ip nft nsenter python3 curl dnsmasq openssl setpriv

. "$here/world.sh"
world_begin
T=$WORLD_TMP
world_services allowed.test=$WORLD_NET_ADDR denied.test=$WORLD_NET_ADDR \
	xn--bcher-kva.test=$WORLD_NET_ADDR ||
	{ echo "not ok - the world's services did not start"; exit 1; }

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
    methods: [GET]
    paths: ["/ok/*"]
P

# The value of one line of /proc/PID/status.
status_of() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" | tr -s '[:space:]' ' ' | sed 's/ $//'; }
# Bounded wait for TEXT in FILE.
wait_for_text() {
	for _ in $(seq 100); do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}
code() {
	world_host curl -s -m 10 -o /dev/null -w '%{http_code}' -x "http://$1" "${@:2}" 2>/dev/null
}

# ---- as root: a uid of its own ----
mkdir -m 700 "$T/ca"
GW=203.0.113.1:3128
# No --upstream-ca: the origins' trust store is the default bundle file,
# which must be loaded before confinement (SSL_CERT_FILE names it here).
world_gateway_up "$T/gw.log" 3128 env SSL_CERT_FILE="$T/cert.pem" "$SLUICE" gateway \
	--policy "$T/policy.yaml" --listen $GW --resolver "$WORLD_NET_ADDR:53" \
	--audit "$T/audit.log" --sandbox confined --ca-dir "$T/ca" || exit 1
pid=$world_gw_pid
wait_for_text "$T/gw.log" "proxy on" || notok "the gateway says it serves: $(cat "$T/gw.log")"

uid=$(status_of "$pid" Uid | cut -d' ' -f1)
check "the serving gateway's uid is an allocated one, not root (real, effective, saved, fs)" \
	"yes" "$( [ -n "$uid" ] && [ "$uid" -ge $((0x7F000000)) ] && [ "$uid" -le $((0x7F00FFFF)) ] &&
		[ "$(status_of "$pid" Uid)" = "$uid $uid $uid $uid" ] && echo yes)"
check "... its gids are the same number, no supplementary group" "$uid $uid $uid $uid|" \
	"$(status_of "$pid" Gid)|$(status_of "$pid" Groups)"
check "... it has no capability in any set" \
	"0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000" \
	"$(for c in CapInh CapPrm CapEff CapBnd CapAmb; do echo "$(status_of "$pid" $c)"; done | xargs)"
check "... no_new_privs" "1" "$(status_of "$pid" NoNewPrivs)"
check "... and a seccomp filter (mode 2)" "2" "$(status_of "$pid" Seccomp)"
check "... it is chrooted into the empty directory" "/run/sluice/empty" "$(readlink "/proc/$pid/root")"
check "... and not dumpable (its /proc entries are root's)" "0" "$(stat -c %u "/proc/$pid/status")"
check "... which is empty, root's, mode 555" "0 0 555 0" \
	"$(stat -c '%u %g %a' /run/sluice/empty) $(find /run/sluice/empty -mindepth 1 | wc -l)"
check_has "... and it says so" "confined: uid $uid" "$(cat "$T/gw.log")"
check "the lock of its uid is held" "yes" "$([ -e "/run/sluice/uid/$uid" ] && echo yes)"

check "a plain request the policy allows reaches the origin" "200" \
	"$(code $GW http://allowed.test/ok/plain)"
check_has "... and the origin served it" "GET /ok/plain" "$(cat "$T/origin.log")"
check "a plain request it denies gets 403" "403" "$(code $GW http://denied.test/x)"
check "an inspected request (TLS, the CA of --ca-dir) goes through" "200" \
	"$(code $GW --cacert "$T/ca/ca.crt" https://allowed.test/ok/tls)"
check_has "... the origin served it over TLS" "GET /ok/tls" "$(cat "$T/origin.log")"
check "an inspected path the policy does not name gets 403" "403" \
	"$(code $GW --cacert "$T/ca/ca.crt" https://allowed.test/no)"
check "... and the gateway lives on" "yes" "$(kill -0 "$pid" 2>/dev/null && echo yes)"
check_lacks "... it never reached the origin" "GET /no" "$(cat "$T/origin.log")"
check_has "the audit log has the inspected exchange" '"path":"/ok/tls","status":200' \
	"$(cat "$T/audit.log")"

# Rewritten in place first (the same file), then replaced as an editor or
# mv does (a new file under the name): each reload reads what the name
# holds now.
reloads() { grep -c "policy.yaml: reloaded" "$T/gw.log"; }
wait_reloads() {
	for _ in $(seq 100); do [ "$(reloads)" -ge "$1" ] && return 0; sleep 0.1; done
	notok "reload $1 is reported: $(cat "$T/gw.log")"
}
cat >"$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
P
kill -HUP "$pid"
wait_reloads 1
check "after a reload of the policy rewritten in place, it allows what it names now" "200" \
	"$(code $GW http://allowed.test/any)"
write_policy "$T/policy.new" <<'P'
version: 1
allow:
  - host: denied.test
P
mv "$T/policy.new" "$T/policy.yaml"
kill -HUP "$pid"
wait_reloads 2
check "after a reload of a policy replaced by mv, what it allows now goes through" "200" \
	"$(code $GW http://denied.test/now)"
check "... and what it no longer names is denied" "403" "$(code $GW http://allowed.test/ok/now)"
chmod 666 "$T/policy.yaml"
kill -HUP "$pid"
wait_for_text "$T/gw.log" "not reloaded" || notok "a refused reload is reported: $(cat "$T/gw.log")"
check_has "a reload still checks who can write the file" "others can write" "$(cat "$T/gw.log")"
check "... and the running policy stays" "200" "$(code $GW http://denied.test/still)"
chmod 644 "$T/policy.yaml"
# A host in Unicode: the confined process reads it with libidn2, opened
# before it was confined (chrooted into an empty directory, it could not
# be now).
write_policy "$T/policy.new" <<'P'
version: 1
allow:
  - host: denied.test
  - host: bücher.test
P
mv "$T/policy.new" "$T/policy.yaml"
kill -HUP "$pid"
wait_reloads 3
check "after a reload of a policy that names a host in Unicode, its A-label is allowed" "200" \
	"$(code $GW http://xn--bcher-kva.test/idn)"
check_has "... and the origin served it" "GET /idn" "$(cat "$T/origin.log")"

mv "$T/audit.log" "$T/audit.log.1"
kill -USR1 "$pid"
wait_for_file "$T/audit.log" || notok "SIGUSR1 makes a new audit log"
code $GW http://denied.test/rotated >/dev/null
check_has "the audit log is reopened on SIGUSR1" '"path":"/rotated"' "$(cat "$T/audit.log" 2>/dev/null)"

kill -TERM "$pid"
wait "$pid"
check "SIGTERM stops the confined gateway cleanly (exit 0)" "0" "$?"
world_forget "$pid"
gone=no
for _ in $(seq 100); do [ -e "/run/sluice/uid/$uid" ] || { gone=yes; break; }; sleep 0.1; done
check "... and its uid is released" "yes" "$gone"

# ---- as root, a user named by --gateway-user ----
world_gateway_up "$T/gw2.log" 3130 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen 203.0.113.1:3130 --resolver "$WORLD_NET_ADDR:53" --gateway-user 4242 || exit 1
pid=$world_gw_pid
wait_for_text "$T/gw2.log" "proxy on"
check "--gateway-user 4242: the gateway serves as uid 4242" "4242 4242 4242 4242" \
	"$(status_of "$pid" Uid)"
check "... and a request goes through" "200" "$(code 203.0.113.1:3130 http://denied.test/named)"
# Its reader (the root child that reopens files) killed: a SIGHUP is
# refused with the reason, and the gateway serves on with the policy it had.
reader=
for c in $(cat "/proc/$pid/task/$pid/children" 2>/dev/null); do
	[ "$(status_of "$c" Uid)" = "0 0 0 0" ] && reader=$c
done
check "the control: the gateway has a reader of root's" "yes" "$([ -n "$reader" ] && echo yes)"
[ -n "$reader" ] && kill -KILL "$reader"
for _ in $(seq 50); do
	case "$(status_of "$reader" State 2>/dev/null)" in Z* | "") break ;; esac
	sleep 0.1
done
kill -HUP "$pid"
wait_for_text "$T/gw2.log" "not reloaded" || notok "a reload without its reader is reported: $(cat "$T/gw2.log")"
check_has "... saying the reader is gone" "asking the policy reader for $T/policy.yaml: it is gone" \
	"$(cat "$T/gw2.log")"
check "... and the gateway serves on, with its policy" "200 403" \
	"$(code 203.0.113.1:3130 http://denied.test/after-reader) $(code 203.0.113.1:3130 http://allowed.test/after-reader)"
kill -TERM "$pid"
wait "$pid"
world_forget "$pid"
out=$(world_host "$SLUICE" gateway --policy "$T/policy.yaml" --listen 203.0.113.1:3131 \
	--gateway-user root 2>&1)
check_has "--gateway-user root is refused" "--gateway-user root" "$out"

# ---- what it cannot confine itself to, it does not serve with ----
# Each in a mount namespace of its own, with a tmpfs on /run/sluice: the
# machine's /run/sluice/empty is never touched.
refused() { # refused SETUP: the gateway's exit status and its last line
	local out rc
	# timeout: a bound, should a gateway serve when it must not.
	out=$(world_host timeout 30 unshare -m --propagation private sh -c "mount -t tmpfs -o mode=755 slt-run /run/sluice && $1 &&
		exec '$SLUICE' gateway --policy '$T/policy.yaml' --listen 203.0.113.1:3133 \
		--resolver '$WORLD_NET_ADDR:53'" 2>&1)
	rc=$?
	echo "$rc $(echo "$out" | tail -n 1)"
}
out=$(refused "mkdir /run/sluice/empty && touch /run/sluice/empty/x && chmod 555 /run/sluice/empty")
check_has "an empty directory that is not empty is refused (exit 4), naming what it holds" \
	"4 sluice gateway: /run/sluice/empty: must be empty, holds 'x' (the gateway is chrooted there); not serving" "$out"
out=$(refused "ln -s /tmp /run/sluice/empty")
check_has "... so is a symlink in its place" "not a directory (a link?): the gateway is chrooted there; remove it; not serving" "$out"
check_has "... (exit 4)" "4 sluice gateway: /run/sluice/empty:" "$out"
out=$(refused "mkdir -m 777 /run/sluice/empty")
check_has "... and one anyone can write" "4 sluice gateway: /run/sluice/empty: must be root:root, mode 0555" "$out"
# In a user namespace of its own, "root" cannot drop its groups nor become
# a uid the namespace does not map: it says so and exits, after binding
# its port but before serving.
out=$(world_host timeout 30 unshare -m --propagation private sh -c "mount -t tmpfs -o mode=755 slt-run /run/sluice &&
	exec unshare -r '$SLUICE' gateway --policy '$T/policy.yaml' --listen 203.0.113.1:3134 \
	--resolver '$WORLD_NET_ADDR:53' --gateway-user 4242" 2>&1)
rc=$?
check "a gateway that cannot confine itself exits 4" "4" "$rc"
check "... and says why (a step that needs privileges it lacks), and that it does not serve" \
	"yes" "$(echo "$out" | grep -q 'sluice gateway: cannot confine the gateway: .*: Operation not permitted; not serving$' && echo yes)"

# ---- unprivileged: its own ids, still filtered ----
world_gateway_up "$T/gw3.log" 3132 setpriv --reuid 4243 --regid 4243 --clear-groups \
	"$SLUICE" gateway --policy "$T/policy.yaml" --listen 203.0.113.1:3132 \
	--resolver "$WORLD_NET_ADDR:53" || exit 1
pid=$world_gw_pid
wait_for_text "$T/gw3.log" "proxy on"
check "unprivileged, the gateway keeps its uid" "4243 4243 4243 4243" "$(status_of "$pid" Uid)"
check "... and is filtered, with no_new_privs" "2 1" \
	"$(status_of "$pid" Seccomp) $(status_of "$pid" NoNewPrivs)"
check "... and a request goes through" "200" "$(code 203.0.113.1:3132 http://denied.test/unpriv)"
kill -TERM "$pid"
wait "$pid"
check "... and it exits cleanly" "0" "$?"
world_forget "$pid"

check "the canary saw nothing from any of it" "0" "$(world_canary_count)"
finish
