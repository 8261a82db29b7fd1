#!/bin/bash
# The README's second command: install what is missing, build, and run every
# test: unit and CLI tests on a normal build and on an ASan+UBSan build, the
# integration tests (root; they build their own network namespaces), and
# each fuzz harness for a bounded time.
#
#   FUZZ_SECONDS=N   how long each fuzzer runs (default 20)
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test || exit 1

fuzz_seconds=${FUZZ_SECONDS:-20}
passed=0
failed=0
failures=()

# Add one build's results (meson's testlog.json) to the tally.
tally() {
	local dir=$1 label=$2 counts
	counts=$(python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, sys
ok = bad = 0
names = []
for line in open(sys.argv[1]):
    t = json.loads(line)
    if t["result"] in ("OK", "EXPECTEDFAIL"):
        ok += 1
    elif t["result"] != "SKIP":
        bad += 1
        names.append(t["name"].replace(" ", ""))  # one word a test
print(ok, bad, " ".join(names))
PY
)
	read -r ok bad names <<<"$counts"
	passed=$((passed + ok))
	failed=$((failed + bad))
	for n in $names; do failures+=("$label:$n"); done
}

run_meson_tests() {
	local dir=$1 label=$2
	shift 2
	echo "== $label: meson test $*"
	meson test -C "$dir" --print-errorlogs "$@"
	tally "$dir" "$label"
}

# The next build compiles while this one's tests run, at the lowest
# priority (the tests mostly wait on the network and on processes, and
# nice 19 keeps them ahead of the compiler): the run stays within CI's 20
# minutes. Its output comes after the tests. bg_build LABEL COMMAND...
bg_pid=
bg_build() {
	local label=$1
	shift
	bg_label=$label bg_log=$(mktemp)
	nice -n 19 "$@" >"$bg_log" 2>&1 &
	bg_pid=$!
}
bg_wait() { # the background build's status; what it said, once
	local rc=0
	wait "$bg_pid" || rc=$?
	echo "== $bg_label"
	cat "$bg_log"
	rm -f "$bg_log"
	return $rc
}
asan_opts=(-Dtests=enabled -Db_sanitize=address,undefined -Db_lundef=false)
fuzz_opts=(-Dfuzz=enabled -Db_sanitize=address,undefined -Db_lundef=false)

echo "== build (gcc, -Werror)"
if scripts/build.sh build -Dtests=enabled; then
	bg_build "build (ASan + UBSan)" scripts/build.sh build-asan "${asan_opts[@]}"
	run_meson_tests build build
else
	failed=$((failed + 1))
	failures+=("build")
	bg_build "build (ASan + UBSan)" scripts/build.sh build-asan "${asan_opts[@]}"
fi

if bg_wait; then
	bg_build "build (fuzz harnesses, clang)" env CC=clang scripts/build.sh build-fuzz \
		"${fuzz_opts[@]}"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		run_meson_tests build-asan asan --no-suite plain-only
else
	failed=$((failed + 1))
	failures+=("build-asan")
	bg_build "build (fuzz harnesses, clang)" env CC=clang scripts/build.sh build-fuzz \
		"${fuzz_opts[@]}"
fi

# One fuzzer a core at a time: each still runs its full time, the phase
# takes half as long on two cores.
fuzz_jobs=$(nproc 2>/dev/null || echo 1)
fuzz_one() {
	local f=$1 corpus=build-fuzz/corpus-$1 seeds=(tests/fuzz/corpus/$1)
	mkdir -p "$corpus"
	[ "$f" = policy ] && seeds+=(examples)
	build-fuzz/tests/fuzz/fuzz-$f -max_total_time="$fuzz_seconds" -timeout=10 \
		-rss_limit_mb=2048 -dict=tests/fuzz/$f.dict -artifact_prefix=build-fuzz/ \
		"$corpus" "${seeds[@]}" >build-fuzz/fuzz-$f.log 2>&1
	echo $? >build-fuzz/fuzz-$f.rc
}

echo "== fuzz harnesses, ${fuzz_seconds}s each, $fuzz_jobs at a time"
if bg_wait; then
	fuzzers=(policy host dns dns-budget tls-hello http http-response nflog scrub reqhead first-flight socks metrics control learn ca-pem ws-frame ws-scrub)
	running=0
	for f in "${fuzzers[@]}"; do
		rm -f build-fuzz/fuzz-$f.rc
		if [ "$running" -ge "$fuzz_jobs" ]; then
			wait -n
			running=$((running - 1))
		fi
		fuzz_one "$f" &
		running=$((running + 1))
	done
	wait
	for f in "${fuzzers[@]}"; do
		if [ "$(cat build-fuzz/fuzz-$f.rc 2>/dev/null)" = 0 ]; then
			echo "ok - fuzz-$f: $(grep -E '^Done' build-fuzz/fuzz-$f.log)"
			passed=$((passed + 1))
		else
			echo "not ok - fuzz-$f found a crash (or did not run):"
			tail -40 build-fuzz/fuzz-$f.log
			failed=$((failed + 1))
			failures+=("fuzz-$f")
		fi
	done
else
	failed=$((failed + 1))
	failures+=("build-fuzz")
fi

echo
[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "sluice: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
