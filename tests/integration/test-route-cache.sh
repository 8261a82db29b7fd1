#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The gateway keeps the kernel's answer to "is this address the host's?"
# (a local route) until rtnetlink says something changed (gw-core.c,
# route_cache). A link that goes down takes its IPv4 routes with it and
# the kernel says nothing of those routes, only of the link: an address
# routed out that link before, and delivered to the host itself after
# (a rule that looks in another table before the local one), must be
# refused at once, not connected to on the strength of the old answer.
# Deleting a nexthop object takes the routes through it as silently. And
# a rule deleted (or added) changes where an address goes: the rules'
# messages must reach the gateway too.
# A listener on the gateway host logs any request that reaches it.
#
# Usage: test-route-cache.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-route-cache.sh ip nft nsenter python3 curl ss sysctl

. "$here/world.sh"
world_begin
T=$WORLD_TMP
H=$WORLD_HOST
X=192.0.2.77 # routed out lk0 by table 100, and local in the local table
Y=192.0.2.78 # the same, by a route through a nexthop object
Z=192.0.2.79 # the same, by a rule of its own (table 102)

# In the gateway's namespace: lk0 (IPv6 off, so that its going down says
# nothing of addresses or routes), a rule that looks in table 100 before
# the local table, X out lk0 there (nobody answers), and X local too.
ip -n "$H" link add lk0 type veth peer name lk1
ip netns exec "$H" sysctl -qw net.ipv6.conf.lk0.disable_ipv6=1 net.ipv6.conf.lk1.disable_ipv6=1
ip -n "$H" addr add 192.0.2.1/24 dev lk0
ip -n "$H" link set lk0 up
ip -n "$H" link set lk1 up
ip -n "$H" rule add pref 10 lookup 100
ip -n "$H" rule del pref 0
ip -n "$H" rule add pref 100 lookup local
ip -n "$H" route add $X dev lk0 table 100
ip -n "$H" route add local $X dev lo table local
ip -n "$H" rule add pref 9 to $Z/32 lookup 102
ip -n "$H" route add $Z dev lk0 table 102
ip -n "$H" route add local $Z dev lo table local
ip -n "$H" nexthop add id 5 dev lk0
ip -n "$H" route add $Y nhid 5 table 100
ip -n "$H" route add local $Y dev lo table local

write_policy "$T/policy.yaml" <<P
version: 1
private_addresses: [192.0.2.0/24]
allow:
  - host: "$X"
    ports: [8077]
  - host: "$Y"
    ports: [8077]
  - host: "$Z"
    ports: [8077]
P
world_host_bg "$PY" "$here/lib/listener.py" "$T/host.log" "0.0.0.0:8077=2"
world_pids+=($!)
wait_for_file "$T/host.log.ready" || { echo "not ok - the host's listener did not start"; exit 1; }
touch "$T/host.log"
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen 203.0.113.1:3128 --resolver "$WORLD_NET_ADDR:53" --audit "$T/audit.log" \
	--sandbox test --connect-timeout 700 || exit 1
sleep 2 # what setting up the world made the kernel say has all been said

code() {
	world_host curl -s -m 10 -o /dev/null -w '%{http_code}' -x http://203.0.113.1:3128 "$@" \
		2>/dev/null
}
check "the address routed out lk0 (nobody there): not the host's, the connect times out" "504" \
	"$(code http://$X:8077/one)"
check "another, by a rule of its own: the same" "504" "$(code http://$Z:8077/one)"
ip -n "$H" rule del pref 9
check "the rule deleted: the kernel delivers that one locally" "local" \
	"$(ip -n "$H" route get $Z | awk 'NR == 1 { print $1 }')"
check "... a request to it: 403" "403" "$(code http://$Z:8077/rule)"
check "another, through a nexthop object: the same" "504" "$(code http://$Y:8077/one)"
ip -n "$H" nexthop del id 5
check "the nexthop deleted (its route goes with it, unannounced): the kernel delivers it locally" \
	"local" "$(ip -n "$H" route get $Y | awk 'NR == 1 { print $1 }')"
check "... a request to it: 403" "403" "$(code http://$Y:8077/nh)"
ip -n "$H" link set lk0 down
check "lk0 down: the kernel now delivers the address to the host itself" "local" \
	"$(ip -n "$H" route get $X | awk 'NR == 1 { print $1 }')"
check "... a request to it: 403" "403" "$(code http://$X:8077/two)"
check "... audited" '"reason":"private-address"' \
	"$(grep -F '"path":"/two"' "$T/audit.log" | grep -o '"reason":"private-address"')"
check "... nothing reached the host's listener" "none" \
	"$(grep -q request "$T/host.log" && tr '\n' ' ' <"$T/host.log" || echo none)"

finish
