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
cat >"$T/dnsmasq.conf" <<CONF
no-resolv
no-hosts
listen-address=$WORLD_NET_ADDR
bind-interfaces
address=/demo.test/$WORLD_NET_ADDR
CONF
world_bg "$WORLD_NET" dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=
world_bg "$WORLD_NET" python3 "$PWD/tests/integration/lib/origin.py" "$T/origin.log" - - \
	"$WORLD_NET_ADDR"
for _ in $(seq 50); do [ -e "$T/origin.log.ready" ] && break; sleep 0.1; done
cp examples/demo/agent.sh "$T/agent.sh"
chmod 755 "$T/agent.sh"

echo "\$ sluice run --policy examples/demo/policy.yaml --audit audit.log -- agent.sh"
world_host "$sluice" run --policy "$PWD/examples/demo/policy.yaml" --resolver "$WORLD_NET_ADDR:53" \
	--audit "$T/audit.log" -- "$T/agent.sh" || true

bold "3. the audit log: one JSON line per decision (here, a few fields of each)"
python3 - "$T/audit.log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print("  %-5s %-4s %-20s %-22s %-3s %s" % (r["decision"], r["method"] or "", r["host"] or "",
          (r["path"] or "")[:22], r["status"] or "", r["rule"] or r["reason"]))
PY
echo
echo "  packets that reached the canary host in the 'internet': $(world_canary_count)"
echo "  requests the origin served: $(wc -l <"$T/origin.log")"

bold "Done. Next: docs/policy.md, then your own policy with sluice check and sluice run."
