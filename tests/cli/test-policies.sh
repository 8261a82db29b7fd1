#!/bin/bash
# The policies in examples/ that people copy do what their comments say:
# each is valid, and `sluice check --decide` gives the decisions their
# comments promise (clone's POST allowed, a push refused, npm publish and a
# PyPI upload refused, the model APIs only on their endpoints). The real
# clients against these policies: tests/integration/test-recipes.sh.
#   test-policies.sh SLUICE SOURCE-ROOT
set -uo pipefail
sluice=$1
ex=$2/examples
n=0
bad=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $1"; }

# decide POLICY WANT-STATUS WANT-PREFIX HOST[:PORT] [METHOD PATH]
decide() {
	local p=$1 want=$2 prefix=$3 out rc
	shift 3
	out=$("$sluice" check "$ex/$p" --decide "$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ] && [[ $out == "$prefix"* ]]; then
		ok "$p: $* -> $out"
	else
		notok "$p: $*: want exit $want and '$prefix...', got exit $rc: $out"
	fi
}

for p in anthropic openai github-readonly npm-readonly pypi-readonly dev-agent; do
	out=$("$sluice" check "$ex/$p.yaml" 2>&1)
	[ $? = 0 ] && grep -q "valid (version 1)" <<<"$out" && ok "examples/$p.yaml is valid" ||
		notok "examples/$p.yaml: $out"
done

gh=github-readonly.yaml
repo=/your-org/your-repo
decide $gh 0 "allow github-read " github.com GET "$repo.git/info/refs?service=git-upload-pack"
decide $gh 0 "allow github-clone " github.com POST "$repo.git/git-upload-pack"
decide $gh 0 "allow github-clone " github.com POST "$repo/git-upload-pack"
decide $gh 3 "deny - path" github.com POST "$repo.git/git-receive-pack"
decide $gh 3 "deny - path" github.com POST "$repo/git-receive-pack"
decide $gh 3 "deny - path" github.com POST "/someone/else.git/git-upload-pack"
decide $gh 3 "deny - invalid-path" github.com POST "$repo.git/git-upload-pack/../git-receive-pack"
decide $gh 3 "deny - method" github.com PUT "$repo"
decide $gh 3 "deny - method" api.github.com POST /repos/your-org/your-repo/issues
decide $gh 3 "deny - method" api.github.com DELETE /repos/your-org/your-repo
decide $gh 0 "allow github-api-read " api.github.com GET /repos/your-org/your-repo
decide $gh 0 "allow github-content " raw.githubusercontent.com GET /your-org/your-repo/main/README.md
decide $gh 0 "allow github-tarballs " codeload.github.com GET /your-org/your-repo/tar.gz/main
decide $gh 3 "deny deny[2] deny-rule" gist.githubusercontent.com GET /x/raw
decide $gh 3 "deny deny[1] deny-rule" gist.github.com
# ... nor through the REST API, which serves a gist's files with their
# content (GET /gists/ID), whatever gist.* is denied.
decide $gh 3 "deny deny[3] deny-rule" api.github.com GET /gists/aa5a315d61ae9438b18d
decide $gh 3 "deny deny[3] deny-rule" api.github.com GET /gists/public
decide $gh 3 "deny deny[3] deny-rule" api.github.com HEAD /gists
decide $gh 0 "allow github-api-read " api.github.com GET /gitignore/templates
decide dev-agent.yaml 3 "deny deny[3] deny-rule" api.github.com GET /gists/aa5a315d61ae9438b18d
decide $gh 3 "deny - port" github.com:22
decide $gh 3 "deny - port" github.com:80

npm=npm-readonly.yaml
decide $npm 0 "allow npm-registry " registry.npmjs.org GET /left-pad
decide $npm 0 "allow npm-registry " registry.npmjs.org GET /left-pad/-/left-pad-1.3.0.tgz
decide $npm 3 "deny - method" registry.npmjs.org PUT /left-pad
decide $npm 3 "deny - method" registry.npmjs.org PUT /-/user/org.couchdb.user:me
decide $npm 3 "deny - method" registry.npmjs.org DELETE /left-pad/-rev/1
decide $npm 3 "deny - method" registry.npmjs.org POST /-/npm/v1/security/advisories/bulk
decide $npm 3 "deny - no-rule" registry.yarnpkg.com GET /left-pad

py=pypi-readonly.yaml
decide $py 0 "allow pypi-index " pypi.org GET /simple/requests/
decide $py 0 "allow pypi-files " files.pythonhosted.org GET /packages/ab/cd/requests-2.31.0-py3-none-any.whl
decide $py 3 "deny - no-rule" upload.pypi.org POST /legacy/
decide $py 3 "deny - method" pypi.org POST /legacy/
decide $py 3 "deny - method" files.pythonhosted.org PUT /x

decide anthropic.yaml 0 "allow anthropic-messages " api.anthropic.com POST /v1/messages
decide anthropic.yaml 0 "allow anthropic-models " api.anthropic.com GET /v1/models
decide anthropic.yaml 3 "deny - path" api.anthropic.com POST /v1/files
decide anthropic.yaml 3 "deny - port" api.anthropic.com:80
decide openai.yaml 0 "allow openai-api " api.openai.com POST /v1/chat/completions
decide openai.yaml 3 "deny - path" api.openai.com POST /v1/files
decide openai.yaml 3 "deny - method" api.openai.com DELETE /v1/models/x

echo "1..$n"
exit $((bad > 0))
