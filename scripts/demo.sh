#!/bin/bash
# The README's first command: install what is missing, build, run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
sluice=build/cli/sluice

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }

bold "1. sluice check validates a policy and prints what it will enforce"
echo "\$ sluice check examples/dev-agent.yaml"
$sluice check examples/dev-agent.yaml

bold "2. a policy with mistakes is refused, every one located"
bad=$(mktemp --suffix=.yaml)
trap 'rm -f "$bad"' EXIT
cat >"$bad" <<'YAML'
version: 1
allow:
  - host: "*"
  - host: api.example.com
    methods: [get]
    inject: { header: Authorization, secret: missing }
  - host: BÜCHER.de
    prot: [443]
YAML
cat -n "$bad"
echo "\$ sluice check $bad"
$sluice check "$bad" || echo "(exit status $?)"

bold "3. how the dev-agent policy decides (sluice check FILE --decide HOST[:PORT] [METHOD PATH])"
printf '%-62s %s\n' "request" "decision"
while read -r target method path; do
	args=("$target")
	[ -n "$method" ] && args+=("$method" "$path")
	out=$($sluice check examples/dev-agent.yaml --decide "${args[@]}" || true)
	printf '%-62s %s\n' "${args[*]}" "$out"
done <<'REQ'
api.anthropic.com:443 POST /v1/messages
api.anthropic.com:443 GET /v1/messages
api.anthropic.com:443 POST /v1/messages/../../admin
registry.npmjs.org GET /left-pad
registry.npmjs.org PUT /left-pad
raw.githubusercontent.com GET /org/repo/main/README.md
GIST.githubusercontent.com.
github.com:22
github.com POST /your-org/your-repo.git/git-receive-pack
[github.com]
evil.com
api.anthropic.com.evil.com
169.254.169.254:80
REQ

bold "Done. Next: read docs/policy.md, write your own policy, and try it with sluice check."
