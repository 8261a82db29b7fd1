#!/bin/bash
# `sluice --help` names every flag of every command: each flag a command's
# own usage (`sluice COMMAND --help`, its lines up to the first blank one)
# lists must be in the top-level help too, so that nobody reading it misses
# one (run's --audit, --resolver and --upstream-ca once were).
#   test-help.sh SLUICE
set -uo pipefail
sluice=$1
n=0
bad=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $1"; }

top=$("$sluice" --help 2>&1)
[ $? = 0 ] && ok "sluice --help exits 0" || notok "sluice --help exits non-zero"
for cmd in attach check gateway guard learn probe run; do
	own=$("$sluice" "$cmd" --help 2>&1 | sed -n '1,/^$/p')
	flags=$(grep -o -- '--[a-z][a-z-]*' <<<"$own" | sort -u)
	if [ -z "$flags" ] && [ "$cmd" != check ]; then
		notok "sluice $cmd --help lists no flag: $own"
		continue
	fi
	missing=
	for f in $flags; do
		grep -qF -- "$f" <<<"$top" || missing="$missing $f"
	done
	if [ -z "$missing" ]; then
		ok "sluice --help names every flag of $cmd ($(echo $flags | wc -w))"
	else
		notok "sluice --help omits $cmd's$missing"
	fi
done
echo "1..$n"
exit $((bad > 0))
