#!/bin/bash
# `sluice check` as a user runs it: every example is valid, mistakes are
# located, --decide answers with allow/deny first and the right exit code.
#   test-check.sh SLUICE SOURCE_ROOT
set -uo pipefail
sluice=$1
root=$2
n=0
bad=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $1"; }

# expect NAME WANT_STATUS WANT_TEXT CMD...: runs CMD, checks status and that
# its stdout+stderr contain WANT_TEXT.
expect() {
	local name=$1 want_status=$2 want_text=$3 out status
	shift 3
	out=$("$@" 2>&1)
	status=$?
	if [ "$status" -ne "$want_status" ]; then
		notok "$name: exit $status, want $want_status; output: $out"
	elif ! grep -qF -- "$want_text" <<<"$out"; then
		notok "$name: output lacks '$want_text'; output: $out"
	else
		ok "$name"
	fi
}

for f in "$root"/examples/*.yaml; do
	expect "example $(basename "$f") is valid" 0 "valid (version 1)" "$sluice" check "$f"
done

cat >"$tmp/bad.yaml" <<'YAML'
version: 1
allow:
  - host: "*"
  - host: a.com
    methods: [get]
YAML
expect "errors are located" 1 "$tmp/bad.yaml:3:11: invalid host '*'" "$sluice" check "$tmp/bad.yaml"
expect "every error is shown" 1 "$tmp/bad.yaml:5:15: method 'get' must be written in upper case" \
	"$sluice" check "$tmp/bad.yaml"
expect "missing file" 1 "/nonexistent.yaml:1:1: cannot open: No such file or directory" \
	"$sluice" check /nonexistent.yaml
expect "no file" 2 "usage: sluice check FILE" "$sluice" check
expect "unknown option" 2 "unknown option '--frobnicate'" "$sluice" check "$tmp/bad.yaml" --frobnicate
expect "unknown command" 2 "unknown command 'frobnicate'" "$sluice" frobnicate

dev=$root/examples/dev-agent.yaml
expect "decide: allowed API call" 0 "allow model-api allowed: api.anthropic.com:443 allowed by model-api" \
	"$sluice" check "$dev" --decide api.anthropic.com:443 POST /v1/messages
expect "decide: connection to an inspected host" 0 "; requests are inspected" \
	"$sluice" check "$dev" --decide api.anthropic.com
expect "decide: wrong method" 3 "deny - method: api.anthropic.com:443 is allowed, but not method GET" \
	"$sluice" check "$dev" --decide api.anthropic.com GET /v1/messages
expect "decide: dot segments" 3 "deny - invalid-path" \
	"$sluice" check "$dev" --decide api.anthropic.com POST /v1/messages/../../admin
expect "decide: deny beats wildcard, any spelling" 3 "deny deny[1] deny-rule: gist.githubusercontent.com:443 denied" \
	"$sluice" check "$dev" --decide GIST.GitHubUserContent.com.
expect "decide: npm publish is a PUT" 3 "deny - method" \
	"$sluice" check "$dev" --decide registry.npmjs.org PUT /left-pad
expect "decide: git push is denied" 3 "deny - path" \
	"$sluice" check "$dev" --decide github.com POST /your-org/your-repo.git/git-receive-pack
expect "decide: other port" 3 "deny - port: github.com is allowed, but not on port 22" \
	"$sluice" check "$dev" --decide github.com:22
expect "decide: unknown host" 3 "deny - no-rule: evil.com is not allowed" \
	"$sluice" check "$dev" --decide evil.com
expect "decide: suffix trick" 3 "deny - no-rule" \
	"$sluice" check "$dev" --decide api.anthropic.com.evil.com
expect "decide: brackets" 3 "deny - invalid-host: invalid host: brackets must enclose an IPv6 address" \
	"$sluice" check "$dev" --decide '[github.com]'
expect "decide: bad port" 2 "port is not a number from 1 to 65535" \
	"$sluice" check "$dev" --decide github.com:99999
expect "decide: METHOD without PATH" 2 "--decide takes HOST[:PORT] [METHOD PATH]" \
	"$sluice" check "$dev" --decide github.com GET

# Observe mode (docs/observe.md): said loudly; --decide says what it lets by.
printf 'version: 1\nmode: observe\nallow:\n  - host: a.com\ndeny:\n  - host: b.a.com\n' >"$tmp/obs.yaml"
expect "observe mode: check says so" 0 "mode: observe (rules NOT enforced)" "$sluice" check "$tmp/obs.yaml"
expect "observe mode: ... with the banner" 0 "OBSERVE MODE: the policy's rules are NOT enforced" \
	"$sluice" check "$tmp/obs.yaml"
expect "observe mode: an enforce policy says enforce" 0 "mode: enforce" "$sluice" check "$dev"
expect "observe mode: decide, no rule" 3 "observe-deny default no-rule: evil.com is not allowed" \
	"$sluice" check "$tmp/obs.yaml" --decide evil.com
expect "observe mode: decide, a deny rule" 3 "observe-deny deny[1] deny-rule: b.a.com:443 denied by deny[1]" \
	"$sluice" check "$tmp/obs.yaml" --decide b.a.com
expect "observe mode: decide, allowed" 0 "allow allow[1] allowed" "$sluice" check "$tmp/obs.yaml" --decide a.com
printf 'version: 1\nmode: learn\n' >"$tmp/badmode.yaml"
expect "a bad mode is located" 1 "$tmp/badmode.yaml:2:7: 'mode' must be 'enforce' or 'observe', not 'learn'" \
	"$sluice" check "$tmp/badmode.yaml"

# What a port carries: check says it as the gateway will enforce it.
cat >"$tmp/proto.yaml" <<'P'
version: 1
allow:
  - host: git.example.com
    ports: [22]
    protocol: tcp
  - host: api.example.com
    ports: [443, 22]
    methods: [GET]
  - host: web.example.com
P
expect "check shows protocol tcp" 0 "git.example.com  ports 22  protocol tcp  # line 3" \
	"$sluice" check "$tmp/proto.yaml"
expect "check warns about a non-web port of an inspected rule" 0 \
	"proto.yaml:6: warning: allow[2] is inspected, so port 22 carries only TLS" \
	"$sluice" check "$tmp/proto.yaml"
expect "decide: a tcp port is relayed opaque" 0 "; protocol tcp: any bytes, relayed opaque" \
	"$sluice" check "$tmp/proto.yaml" --decide git.example.com:22
expect "decide: an inspected rule's port 22 refuses anything but TLS or HTTP" 0 \
	"any other protocol is refused (inspect-needs-tls)" \
	"$sluice" check "$tmp/proto.yaml" --decide api.example.com:22
expect "decide: a plain allowed port carries TLS or HTTP only" 0 \
	"any other protocol is refused (not-http)" \
	"$sluice" check "$tmp/proto.yaml" --decide web.example.com:80
cat >"$tmp/proto-bad.yaml" <<'P'
version: 1
allow:
  - host: a.example.com
    protocol: tcp
P
expect "protocol tcp without ports is refused, with its place" 1 \
	"proto-bad.yaml:4:15: 'protocol: tcp' needs 'ports'" "$sluice" check "$tmp/proto-bad.yaml"

echo "1..$n"
[ "$bad" -eq 0 ]
