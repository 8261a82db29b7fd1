# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The test world: network namespaces that a test creates and removes, so no
# test touches the machine's own namespace or sends a packet anywhere but
# loopback and TEST-NET addresses. Source it, then:
#
#   world_up            create the world (call world_down from an EXIT trap)
#   world_down          remove it, and every process world_bg started;
#                       first SIGKILL to each pid in world_kill_pids (a
#                       test's own: what must not outlive it, whatever it
#                       does with SIGTERM)
#   world_host CMD...   run CMD in the host namespace (where sluice runs), in
#                       our own mount namespace (`ip netns exec` alone would
#                       remount /sys and hide the cgroup hierarchies)
#   world_host_bg CMD.. the same in the background; $! is CMD's pid
#   world_net CMD...    run CMD in the internet namespace
#   world_bg NS CMD...  start CMD in the background in namespace NS
#   world_begin         world_up, with world_down as the EXIT trap (INT and
#                       TERM exit 1); a world that does not come up is
#                       "not ok" and exit 1
#   world_gateway_up LOG PORTS CMD...
#                       start CMD (`sluice gateway`, or a wrapper that execs
#                       it) with world_host_bg, stdout and stderr appended
#                       to LOG, its pid in $world_gw_pid and in the pids
#                       world_down stops; wait (bounded, 10 s) until it
#                       listens on every one of PORTS (comma-separated: 3128
#                       is TCP, udp:53 UDP). Not by then, or it exited: "not
#                       ok - the gateway did not start: LOG" and return 1
#   wait_for_file FILE  wait (bounded, 5 s) until FILE exists; 1 if not
#   world_forget PID    world_down need not stop PID (the test stopped and
#                       waited for it): its number may be another's by then
#   world_canary_count  packets that reached the canary (or came from a
#                       sandbox address) so far; a bypass test wants 0
#   world_dnsmasq EXTRA NAME=ADDR...
#                       start dnsmasq (queries logged to $WORLD_TMP/dns.log)
#                       answering each NAME (and its subdomains) with ADDR,
#                       EXTRA (lines of dnsmasq.conf, may be "") added, on
#                       $WORLD_NET_ADDR; wait (bounded, 5 s) until it logs
#   world_services NAME=ADDR...
#                       start dnsmasq (the upstream resolver, queries logged
#                       to $WORLD_TMP/dns.log) answering each NAME (and its
#                       subdomains) with ADDR, and the origin (HTTP :80 and
#                       HTTPS :443 with a self-signed cert for every NAME,
#                       requests logged to $WORLD_TMP/origin.log) on
#                       $WORLD_NET_ADDR, in the internet namespace; with
#                       WORLD_ORIGIN_ROOT set, /files/PATH serves its files
#
#   $WORLD_HOST  "host" namespace:  wh0 203.0.113.1/24, 2001:db8::1/64,
#                default routes to the internet; IPv4 forwarding ON, the
#                worst case: sluice must not rely on it being off
#   $WORLD_NET   "internet":        wi0 203.0.113.2/24, 2001:db8::2/64, and
#                the canary 203.0.113.99 / 2001:db8::99 (listening on TCP 80,
#                443, 53 and UDP 53, so that a leak would also connect);
#                169.254.169.254 (the metadata address) is counted too
#
# Names start with slt-ns- so parallel tests of other modules never collide.

WORLD_ID=${WORLD_ID:-$$}
WORLD_HOST=slt-ns-h$WORLD_ID
WORLD_NET=slt-ns-i$WORLD_ID
WORLD_HOST_ADDR=203.0.113.1
WORLD_NET_ADDR=203.0.113.2
WORLD_CANARY=203.0.113.99
WORLD_CANARY6=2001:db8::99
WORLD_POOL=${WORLD_POOL:-10.231.0.0/16}
WORLD_MNT=/proc/$$/ns/mnt
WORLD_TMP= # a directory every user can read, removed by world_down
world_pids=()
world_kill_pids=()

world_host() { ip netns exec "$WORLD_HOST" nsenter --mount="$WORLD_MNT" -- "$@"; }
world_net() { ip netns exec "$WORLD_NET" "$@"; }
# In the background, so that $! is the command itself (ip and nsenter exec
# it), not a subshell: signals sent to $! must reach it.
world_host_bg() { ip netns exec "$WORLD_HOST" nsenter --mount="$WORLD_MNT" -- "$@" & }

world_bg() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@" &
	world_pids+=($!)
}

world_begin() {
	trap world_down EXIT
	trap 'exit 1' INT TERM
	world_up || { echo "not ok - the test world did not come up"; exit 1; }
}

world_gw_pid=
world_gateway_up() {
	local log=$1 ports=$2 p up
	shift 2
	world_host_bg "$@" >>"$log" 2>&1
	world_gw_pid=$!
	world_pids+=("$world_gw_pid")
	for _ in $(seq 100); do
		up=1
		for p in ${ports//,/ }; do
			case $p in
			udp:*) world_host ss -Hlun "sport = :${p#udp:}" 2>/dev/null | grep -q . ;;
			*) world_host ss -Hltn "sport = :$p" 2>/dev/null | grep -q . ;;
			esac || { up=; break; }
		done
		[ -n "$up" ] && return 0
		kill -0 "$world_gw_pid" 2>/dev/null || break # it exited: nothing to wait for
		sleep 0.1
	done
	echo "not ok - the gateway did not start: $(cat "$log")"
	return 1
}

wait_for_file() {
	for _ in $(seq 50); do [ -e "$1" ] && return 0; sleep 0.1; done
	return 1
}

world_forget() {
	local p keep=()
	for p in "${world_pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	world_pids=("${keep[@]}")
}

world_up() {
	local H=$WORLD_HOST I=$WORLD_NET
	ip netns add "$H" || return 1
	ip netns add "$I" || return 1
	ip -n "$H" link set lo up
	ip -n "$I" link set lo up
	# Created inside H with its peer inside I: never in our own namespace.
	ip -n "$H" link add wh0 type veth peer name wi0 netns "$I" || return 1
	ip -n "$H" addr add $WORLD_HOST_ADDR/24 dev wh0
	ip -n "$H" addr add 2001:db8::1/64 dev wh0 nodad
	ip -n "$I" addr add $WORLD_NET_ADDR/24 dev wi0
	ip -n "$I" addr add 2001:db8::2/64 dev wi0 nodad
	ip -n "$I" addr add $WORLD_CANARY/32 dev lo
	ip -n "$I" addr add $WORLD_CANARY6/128 dev lo
	# The cloud metadata address, here inside our own internet namespace
	# only: counted like the canary, so a test can prove nothing reached it.
	ip -n "$I" addr add 169.254.169.254/32 dev lo
	ip -n "$H" link set wh0 up
	ip -n "$I" link set wi0 up
	ip -n "$H" route add default via $WORLD_NET_ADDR
	ip -n "$H" -6 route add default via 2001:db8::2
	# The IPv6 canary lies inside wh0's on-link /64, but on I's lo, where
	# neighbour discovery does not answer for it: without this route a
	# packet to it would die unanswered, fence or no fence, and an
	# "IPv6 is blocked" check could not fail.
	ip -n "$H" -6 route add $WORLD_CANARY6/128 via 2001:db8::2
	# Replies to a sandbox address would need a route back: give the
	# internet one, so only sluice's fence can stop a forwarded packet.
	ip -n "$I" route add "$WORLD_POOL" via $WORLD_HOST_ADDR
	ip netns exec "$H" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
	world_net nft -f - <<NFT || return 1
table inet canary {
	counter hits { }
	chain pre {
		type filter hook prerouting priority -300; policy accept;
		ip daddr $WORLD_CANARY counter name hits
		ip daddr 169.254.169.254 counter name hits
		ip6 daddr $WORLD_CANARY6 counter name hits
		ip saddr $WORLD_POOL counter name hits
	}
}
NFT
	WORLD_TMP=$(mktemp -d /tmp/slt-ns-world.XXXXXX) || return 1
	chmod 755 "$WORLD_TMP"
	cat >"$WORLD_TMP/canary.py" <<'PY'
import socket, sys, threading, select
socks = []
for addr, fam in ((sys.argv[1], socket.AF_INET), (sys.argv[2], socket.AF_INET6)):
    for port in (80, 443, 53):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port)); s.listen(16); socks.append(s)
    u = socket.socket(fam, socket.SOCK_DGRAM)
    u.bind((addr, 53)); socks.append(u)
while True:  # ends when world_down kills it
    r, _, _ = select.select(socks, [], [], 60)
    for s in r:
        if s.type == socket.SOCK_STREAM:
            c, _ = s.accept(); c.close()
        else:
            s.recvfrom(2048)
PY
	world_bg "$I" python3 "$WORLD_TMP/canary.py" "$WORLD_CANARY" "$WORLD_CANARY6"
	local i
	for i in $(seq 50); do # the listeners are up within a few seconds
		world_net ss -Hltn "sport = :80" 2>/dev/null | grep -q . && return 0
		sleep 0.1
	done
	echo "world: the canary's listeners did not start" >&2
	return 1
}

world_canary_count() {
	world_net nft list counter inet canary hits 2>/dev/null |
		awk '/packets/ { for (i = 1; i < NF; i++) if ($i == "packets") print $(i + 1) }'
}

world_down() {
	local p
	for p in "${world_kill_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	world_kill_pids=()
	for p in "${world_pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${world_pids[@]}"; do wait "$p" 2>/dev/null; done
	world_pids=()
	ip netns del "$WORLD_HOST" 2>/dev/null
	ip netns del "$WORLD_NET" 2>/dev/null
	[ -n "${WORLD_TMP:-}" ] && rm -rf "$WORLD_TMP"
	return 0
}

world_dnsmasq() {
	local T=$WORLD_TMP extra=$1 n i
	shift
	{
		echo no-resolv
		echo no-hosts
		echo "listen-address=$WORLD_NET_ADDR"
		echo bind-interfaces
		echo log-queries
		echo "log-facility=$T/dns.log"
		for n in "$@"; do echo "address=/${n%%=*}/${n#*=}"; done
		[ -n "$extra" ] && printf '%s\n' "$extra"
	} >"$T/dnsmasq.conf"
	world_bg "$WORLD_NET" dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=
	for ((i = 0; i < 50; i++)); do [ -s "$T/dns.log" ] && return 0; sleep 0.1; done
	echo "world: dnsmasq did not start" >&2
	return 1
}

world_services() {
	local here_ T=$WORLD_TMP n san=""
	here_=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	world_dnsmasq "" "$@" || return 1
	for n in "$@"; do san="${san:+$san,}DNS:${n%%=*}"; done
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=${1%%=*}" -addext "subjectAltName=$san" \
		-keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null || return 1
	world_bg "$WORLD_NET" env ORIGIN_ROOT="${WORLD_ORIGIN_ROOT:-}" python3 "$here_/lib/origin.py" \
		"$T/origin.log" "$T/cert.pem" "$T/key.pem" "$WORLD_NET_ADDR"
	wait_for_file "$T/origin.log.ready" || { echo "world: the origin did not start" >&2; return 1; }
	touch "$T/origin.log"
}
