# SPDX-License-Identifier: MIT
#
# What the benches that serve an nginx origin in the test world share
# (run-inspect.sh, run-peers.sh). Sourced after tests/integration/world.sh
# and world_begin; uses $T (the world's directory), $O (the origin's
# address in the internet namespace), $PY and die().

# bench_resolver NAME...: dnsmasq in the internet namespace, answering each
# NAME with $O and nothing else. dnsmasq answers its own address= records
# with TTL 0 unless told: give them a real record's lifetime, so that the
# proxies' resolver caches count as they would.
bench_resolver() {
	local n
	{
		printf 'local-ttl=300\nno-resolv\nno-hosts\nlisten-address=%s\nbind-interfaces\n' "$O"
		for n in "$@"; do printf 'address=/%s/%s\n' "$n" "$O"; done
	} >"$T/dnsmasq.conf"
	world_bg "$WORLD_NET" dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=
}

# bench_origin_files NAME...: the origin's prefix W=$T/nginx (www/, tmp/),
# a self-signed P-256 certificate for every NAME (the first its CN), and
# www/small.json, a model API's reply of 300 bytes.
bench_origin_files() {
	local san="" n
	for n in "$@"; do san="${san:+$san,}DNS:$n"; done
	W=$T/nginx
	mkdir -p "$W/www" "$W/tmp" && chmod -R 755 "$W"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=$1" -addext "subjectAltName=$san" \
		-keyout "$W/key.pem" -out "$W/cert.pem" 2>/dev/null ||
		die "openssl could not make the origin's cert"
	chmod 600 "$W/key.pem"
	chmod 644 "$W/cert.pem"
	"$PY" - "$W/www/small.json" <<'PY'
import json, sys
d = {"id": "msg_bench", "type": "message", "role": "assistant", "model": "bench-1",
     "content": [{"type": "text", "text": ""}], "stop_reason": "end_turn",
     "usage": {"input_tokens": 12, "output_tokens": 34}}
base = len(json.dumps(d, separators=(",", ":"))) + 1
d["content"][0]["text"] = "x" * (300 - base)
open(sys.argv[1], "w").write(json.dumps(d, separators=(",", ":")) + "\n")
PY
}

# bench_squid SSL_PORTS [LINE]: squid as a forward proxy (plain HTTP and
# CONNECT to SSL_PORTS, "443 8000"), no cache, on $G:3129 in the host
# namespace, its files under S=$T/squid; LINE is added to its config.
# Sets squid_pid.
bench_squid() {
	S=$T/squid
	mkdir -p "$S"
	getent passwd proxy >/dev/null && chown proxy: "$S"
	cat >"$S/squid.conf" <<SQ
http_port $G:3129
visible_hostname sluice-bench
dns_nameservers $O
acl SSL_ports port $1
acl CONNECT method CONNECT
http_access deny CONNECT !SSL_ports
http_access allow all
cache deny all
cache_mem 8 MB
access_log stdio:$S/access.log
cache_log $S/cache.log
pid_filename $S/squid.pid
coredump_dir $S
netdb_filename none
pinger_enable off
logfile_rotate 0
shutdown_lifetime 1 seconds
${2:-}
SQ
	getent passwd proxy >/dev/null && echo "cache_effective_user proxy" >>"$S/squid.conf"
	world_bg "$WORLD_HOST" "$SQUID" -N -f "$S/squid.conf"
	squid_pid=$!
}
