#!/bin/bash
# The README's first command: install what is missing, build, run the demo.
#
# The demo builds a tiny world of network namespaces on TEST-NET addresses
# (a "host" where sluice runs, an "internet" with an origin and a DNS
# server), runs an agent script under `sluice run` with examples/demo's
# policy, and shows what got through, what was refused, and the audit log.
# Nothing is sent anywhere but those namespaces. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --demo
scripts/build.sh build
sluice=$PWD/build/cli/sluice

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }

bold "1. sluice check: a policy is validated, every mistake located"
bad=$(mktemp --suffix=.yaml)
cat >"$bad" <<'YAML'
version: 1
allow:
  - host: "*"
  - host: api.example.com
    methods: [get]
    inject: { header: Authorization, secret: missing }
YAML
$sluice check "$bad" || true
rm -f "$bad"
echo "\$ sluice check examples/demo/policy.yaml"
$sluice check examples/demo/policy.yaml

if [ "$(id -u)" -ne 0 ]; then
	bold "The live part of the demo creates network namespaces: run it as root."
	exit 0
fi

bold "2. sluice run: an agent in a sandbox whose only way out is the gateway"
WORLD_ID=demo$$
. tests/integration/world.sh
trap 'set +e; world_down' EXIT # world_down must not stop at a failing kill or wait
world_up
T=$WORLD_TMP
# The model API's key: sluice reads it from its own environment; the origin
# (standing in for the real API) from a file only root can read.
key="sk-demo-$(openssl rand -hex 16)"
mkdir -m 700 "$T/secrets"
(umask 077; printf '%s\n' "$key" >"$T/secrets/model.key")
ORIGIN_ANTHROPIC_KEY_FILE=$T/secrets/model.key world_services api.demo.test="$WORLD_NET_ADDR" \
	registry.demo.test="$WORLD_NET_ADDR" upload.demo.test="$WORLD_NET_ADDR" \
	leak.demo.test="$WORLD_NET_ADDR"
chmod 644 "$T/cert.pem"
# The agent's workspace, which the sandbox sees read-only (--ro); the
# policy where only root can change it (sluice refuses one the sandbox
# could rewrite: a clone owned by a user would be such a place).
mkdir -m 755 "$T/agent"
cp examples/demo/agent.sh "$T/agent/agent.sh"
chmod 755 "$T/agent/agent.sh"
cp examples/demo/policy.yaml "$T/policy.yaml"
chmod 644 "$T/policy.yaml"

echo "\$ DEMO_MODEL_KEY=sk-demo-... sluice run --policy policy.yaml --audit audit.log --ro agent/ -- agent/agent.sh"
DEMO_MODEL_KEY=$key world_host "$sluice" run --policy "$T/policy.yaml" --ro "$T/agent" \
	--resolver "$WORLD_NET_ADDR:53" --upstream-ca "$T/cert.pem" --audit "$T/audit.log" \
	-- "$T/agent/agent.sh" | tee "$T/agent.out" || true

bold "3. the audit log: one JSON line per decision (here, a few fields of each)"
python3 - "$T/audit.log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print("  %-5s %-4s %-20s %-22s %-3s %-18s %s" % (r["decision"], r["method"] or "",
          r["host"] or "", (r["path"] or "")[:22], r["status"] or "", r["rule"] or r["reason"],
          "key: " + r["credential"] if r["credential"] else ""))
PY
echo
echo "  the key in anything the agent could see (its output, the audit log): $(
	grep -cF -- "$key" "$T/audit.log" "$T/agent.out" 2>/dev/null | awk -F: '{ n += $2 } END { print n + 0 }')"
echo "  packets that reached the canary host in the 'internet': $(world_canary_count)"
echo "  requests the origin served: $(wc -l <"$T/origin.log"), with the real key: $(grep -c 'auth=real' "$T/origin.log")"

bold "4. sluice probe: the sandbox tries every way out it knows, and reports each"
# The probe is sluice itself; the sandbox sees it in its read-only workspace.
cp "$sluice" "$T/agent/sluice"
chmod 755 "$T/agent/sluice"
echo "\$ sluice run -- sluice probe --outside $WORLD_CANARY"
probe_rc=0
world_host "$sluice" run --ro "$T/agent" -- "$T/agent/sluice" probe --outside "$WORLD_CANARY" \
	>"$T/probe.out" 2>&1 || probe_rc=$?
# A few of its lines (all of them: the file sluice probe writes to stdout).
grep -E '^(blocked|ESCAPED) +(tcp4|dns-foreign|raw4|unix|fs-write|fs-tmp|pid-ns|tty|nft) ' \
	"$T/probe.out" | awk '!seen[$2]++' | sed 's/^/  /' || true
echo "  ..."
tail -n 1 "$T/probe.out" | sed 's/^/  /'
echo "  (exit $probe_rc; packets that reached the canary: $(world_canary_count))"

bold "Done. Next: docs/policy.md, then your own policy with sluice check and sluice run."
