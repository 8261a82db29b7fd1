# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# shellcheck disable=SC2154 # here and world_gw_pid: the suite's and world.sh's
#
# What test-headers.sh and test-review-attacks.sh share: `sluice gateway`
# on 127.0.0.1:3128 with --ca-dir (so it inspects), and raw requests
# through it (lib/hdrclient.py). Source it after world.sh and checks.sh,
# with here, T (the world's directory, holding the origin's cert.pem and
# an empty ca/) and N (the resolver's address) set.
#
#   hdr_gateway_up            start it (policy $T/policy.yaml, audit
#                             $T/audit.log, output $T/gw.err), its pid in
#                             $GW; "not ok" and 1 if it does not listen
#   hdr_gateway_down          check it still runs, stop it (TERM, and wait),
#                             check gw.err holds no sanitizer report (a
#                             sanitizer build's, or a leak's at exit)
#   tls HOST REQUEST...       REQUEST (with \r\n escapes) over TLS to HOST,
#                             the gateway's CA trusted; the answer
#   plain REQUEST...          REQUEST over plain HTTP to the proxy
#   get HOST TARGET [HEADERS] a GET head, in those escapes
#   status ANSWER             its first line
#   served METHOD TARGET      the origin's log lines for them, counted

hdr_gateway_up() {
	world_gateway_up "$T/gw.err" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" \
		--listen 127.0.0.1:3128 --resolver "$N:53" --upstream-ca "$T/cert.pem" --ca-dir "$T/ca" \
		--audit "$T/audit.log" || return 1
	GW=$world_gw_pid
}
hdr_gateway_down() {
	if kill -0 "$GW" 2>/dev/null; then ok "sluice gateway is still running"; else notok "sluice gateway died"; fi
	kill -TERM "$GW"
	wait "$GW"
	world_forget "$GW"
	if grep -qE "AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:" "$T/gw.err"; then
		notok "no sanitizer report: $(grep -m1 -E "Sanitizer|runtime error:" "$T/gw.err")"
	else
		ok "no sanitizer report"
	fi
}
tls() { world_host timeout 30 "$PY" "$here/lib/hdrclient.py" 127.0.0.1:3128 "$T/ca/ca-bundle.crt" tls "$@" 2>&1; }
plain() { world_host timeout 30 "$PY" "$here/lib/hdrclient.py" 127.0.0.1:3128 - plain "$@" 2>&1; }
get() { printf 'GET %s HTTP/1.1\\r\\nHost: %s\\r\\n%s\\r\\n' "$2" "$1" "${3:-}"; }
status() { head -n 1 <<<"$1"; }
served() { grep -c -- "^$1 $2 host=" "$T/origin.log"; }
