#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A hostile agent against the response scrubber (an adversarial review,
# kept as a regression test). sluice injects a key into requests to the
# hosts it inspects and replaces the key with "[redacted by sluice]" where
# a response echoes it; the agent (lib/scrub-agent.py, inside `sluice run`)
# tries to get the key back anyway, from an honest origin
# (lib/scrub-origin.py, HTTPS on 203.0.113.4) that echoes what it gets:
#
#   oracle       a streaming echo of the agent's guesses, one byte longer
#                each round: a scrubber that holds back only the bytes that
#                begin a secret tells, by what it holds, which guess is
#                right. Passes when the agent learns at most 2 bytes: it
#                finds every guess treated alike ("ambiguous" when more
#                than a few are held, "stuck" when none is).
#   range-multi  Range: bytes=4-11,12- on a page that echoes the key: each
#   range-two    part (or each of two requests) is a slice no scrubber can
#                recognise. Passes when no answer is a 206 and nothing came
#                back that holds 8 bytes of the key in a row.
#   range-none   the control: the whole page, the key redacted.
#   trim         the secret's file holds the key with spaces and tabs
#                around it; an origin strips them off a header's value
#                (RFC 9110 5.5) and echoes the key: it is redacted.
#   ws-deflate   a websocket whose greeting echoes the key, permessage-
#                deflate offered: the key is not in the greeting, however
#                it came (compressed or not).
#   ws-plain     the control: no extension offered, the key redacted.
#   ws-smuggle*  plain HTTP behind an allowed upgrade, for an origin that
#                answers 101 and reads on as HTTP: in the upgrade's record,
#                before the 101, after it; never reaches the origin.
#   ws-unmasked  an unmasked frame from the agent ends the websocket; a
#                masked one before it went up as it came.
#   ws-nokey     an upgrade with no Sec-WebSocket-Key: refused.
#   ws-accept-*  a 101 whose Sec-WebSocket-Accept is wrong, or missing: 502.
#
# The origin's log proves each request got its key (key=yes, trim=yes), so
# that no check passes because nothing was injected. No check prints a key
# or a run of 8 of its bytes (show, below). About 10 s.
#
# Usage: test-scrub-attacks.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
# shellcheck source-path=SCRIPTDIR
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-scrub-attacks.sh ip nft nsenter python3 dnsmasq openssl ss timeout

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
X=203.0.113.4 # scrub-origin.py's address, in the internet namespace only
world_net ip addr add "$X/24" dev wi0 || { echo "not ok - $X"; exit 1; }
MARK="[redacted by sluice]"

# The keys: new for every run, in files only root can read. $openai_key
# (make_keys) goes into x-api-key; the trim key's file holds it with
# spaces and a tab around it, as an editor or `echo " $KEY "` leaves it.
make_keys "$T/secrets" || { echo "not ok - could not make the keys"; exit 1; }
api_key=$openai_key
trim_key="tk-trim-$(openssl rand -hex 24)"
(umask 077 && printf '  %s\t \n' "$trim_key" >"$T/secrets/trim.key")

mkdir -m 1777 "$T/work"
world_services api.scrub.test="$X" trim.scrub.test="$X" oracle.scrub.test="$X" ||
	{ echo "not ok - services"; exit 1; }
chmod 644 "$T/cert.pem"

# scrub-origin.py reuses the world's certificate (it names the three
# hosts), so one --upstream-ca covers it. The agent runs as the sandbox's
# user: a copy in $T, which it can read wherever the checkout is.
world_bg "$WORLD_NET" "$PY" "$here/lib/scrub-origin.py" "$T/scrub.log" "$T/cert.pem" "$T/key.pem" "$X"
wait_for_file "$T/scrub.log.ready" || { echo "not ok - scrub-origin.py did not start"; exit 1; }
touch "$T/scrub.log"
cp "$here/lib/scrub-agent.py" "$T/scrub-agent.py" && chmod 644 "$T/scrub-agent.py"

write_policy "$T/policy.yaml" <<P
version: 1
secrets:
  api: { file: $T/secrets/openai.key }
  trim: { file: $T/secrets/trim.key }
allow:
  - host: api.scrub.test
    ports: [443]
    inject: { header: x-api-key, secret: api }
  - host: oracle.scrub.test
    ports: [443]
    inject: { header: x-api-key, secret: api }
  - host: trim.scrub.test
    ports: [443]
    inject: { header: x-trim-key, secret: trim }
P

# key_run KEY TEXT: the length of the longest run of KEY's bytes that TEXT
# holds (a run of L implies one of L - 1: a binary search, bounded).
key_run() {
	local k=$1 t=$2 lo=0 hi=${#1} mid i found
	while [ "$lo" -lt "$hi" ]; do
		mid=$(((lo + hi + 1) / 2))
		found=
		for ((i = 0; i + mid <= ${#k}; i++)); do
			[[ $t == *"${k:i:mid}"* ]] && { found=1; break; }
		done
		if [ -n "$found" ]; then lo=$mid; else hi=$((mid - 1)); fi
	done
	echo "$lo"
}
# Whether TEXT holds 8 bytes in a row of either key.
leaks() { [ "$(key_run "$api_key" "$1")" -ge 8 ] || [ "$(key_run "$trim_key" "$1")" -ge 8 ]; }
# TEXT as evidence, or what it holds instead of it when it holds a key's bytes.
show() {
	if leaks "$1"; then
		printf '[withheld: it holds %s bytes of the api key (%d long), %s of the trim key (%d)]' \
			"$(key_run "$api_key" "$1")" ${#api_key} "$(key_run "$trim_key" "$1")" ${#trim_key}
	else
		printf '%s' "$1"
	fi
}
# The length of the common prefix of A and B.
common_prefix() {
	local i=0
	while [ "$i" -lt "${#1}" ] && [ "$i" -lt "${#2}" ] && [ "${1:i:1}" = "${2:i:1}" ]; do i=$((i + 1)); done
	echo "$i"
}
res() { sed -n "s/^$1: //p" <<<"$out"; }
# The origin's log lines (no values in them) for a path on a host; never
# /stream's, whose targets are the agent's guesses.
olog() { grep -F -- "GET $1 host=$2 " "$T/scrub.log"; }

# ---- the agent, in one `sluice run` ----
# ORACLE_MAX bounds the oracle: a leaky scrubber gives it a byte a round,
# and a dozen bytes prove the leak as well as the whole key would.
attacks=(oracle range-multi range-two range-none pause-cut trim ws-deflate ws-plain ws-long ws-masked ws-big ws-frag ws-close ws-close-mid ws-pause-mid
	ws-smuggle ws-smuggle-late ws-smuggle-after ws-unmasked ws-nokey ws-accept-bad ws-accept-none
	ws-accept-spaced)
t0=$SECONDS
out=$(world_host timeout -k 5 100 "$SLUICE" run --ro "$T" --policy "$T/policy.yaml" --resolver "$N:53" \
	--upstream-ca "$T/cert.pem" --audit "$T/audit.log" \
	-- env HOME="$T/work" ORACLE_MAX=12 "$PY" "$T/scrub-agent.py" "${attacks[@]}" 2>&1)
rc=$?
echo "# sluice run: exit $rc after $((SECONDS - t0)) s"
sed -n 's/^\(.*\) took: \(.*\)$/# \1 took \2/p' <<<"$out"
check "the agent ran to its end inside sluice run" "0 ${#attacks[@]}" "$rc $(grep -c ' took: ' <<<"$out")"
[ "$rc" = 0 ] || echo "# its output: $(show "$out" | head -c 3000)"

# ---- the key was injected: no check below passes for want of it ----
n_api=$(grep -c " host=api.scrub.test key=yes " "$T/scrub.log")
# ws-smuggle's and ws-nokey's upgrades are refused before they go.
check "every request to api.scrub.test reached the origin with the key (25 of them)" "25 0" \
	"$n_api $(grep -c " host=api.scrub.test key=no " "$T/scrub.log")"
n_or=$(grep -c "^GET /stream?g=[0-9a-f]* host=oracle.scrub.test key=yes " "$T/scrub.log")
check "every oracle probe reached the origin with the key (64 or more, none without)" "yes 0" \
	"$([ "$n_or" -ge 64 ] && echo yes || echo "$n_or") $(grep -c " host=oracle.scrub.test key=no " "$T/scrub.log")"
check "the request to trim.scrub.test reached the origin with x-trim-key" "1" \
	"$(olog /echo-trim trim.scrub.test | grep -c ' trim=yes ')"

# ---- 1. the held-back tail as a prefix oracle ----
r=$(res oracle)
case $r in
"ambiguous after "* | "stuck after "*)
	n=${r#* after }
	n=${n%% *}
	if [ "$n" -le 2 ]; then
		ok "oracle: the echo's timing told the agent nothing ($r)"
	else
		notok "oracle: the agent learned $n bytes, one a round, before it was stopped ($r)"
	fi
	;;
"prefix "*)
	m=${r#prefix }
	m=${m%% *}
	best=0
	for b in ${r#*: }; do
		for k in "$api_key" "$trim_key"; do
			p=$(common_prefix "$b" "$k")
			[ "$p" -gt "$best" ] && best=$p
		done
	done
	notok "oracle: the agent read a key byte by byte off what the scrubber held back:" \
		"after $m rounds (ORACLE_MAX) its guess is the first $best bytes of a key"
	;;
"recovered "*)
	k=${r#recovered }
	if [ "$k" = "$api_key" ] || [ "$k" = "$trim_key" ]; then
		notok "oracle: the agent recovered a whole key, byte by byte (${#k} bytes)"
	else
		notok "oracle: an echo came back redacted, with a guess that is no key: $(show "$r")"
	fi
	;;
*) notok "oracle: the attack did not run: $(show "$r")" ;;
esac

# ---- 2. Range on a page that echoes the key ----
r=$(res range-multi)
st=${r%% *}
if [ -n "$r" ] && [ "$st" != 206 ] && ! leaks "$r"; then
	ok "range-multi: no 206 and no run of 8 key bytes in the answer (status $st)"
else
	notok "range-multi: status '$st', the parts joined hold $(key_run "$api_key" "$r") bytes of the" \
		"key (${#api_key} long) in a row; origin: $(olog /echo-range api.scrub.test | grep ' range=yes' | head -n 1)"
fi
r=$(res range-two)
read -r st1 st2 _ <<<"$r"
if [ -n "$r" ] && [ "$st1" != 206 ] && [ "$st2" != 206 ] && ! leaks "$r"; then
	ok "range-two: no 206 and no run of 8 key bytes in the two answers (statuses $st1 $st2)"
else
	notok "range-two: statuses '$st1 $st2', the two slices joined hold $(key_run "$api_key" "$r")" \
		"bytes of the key (${#api_key} long) in a row"
fi
r=$(res range-none)
if [ "${r%% *}" = 200 ] && [[ $r == *"$MARK"* ]] && ! leaks "$r"; then
	ok "range-none (control): the whole page came back with the key redacted"
else
	notok "range-none (control): want 200 with '$MARK' and no key: $(show "$r")"
fi

# ---- 2b. a pause placed in the key ----
# Six answers, each cut by a pause CUT bytes into the key (3 to 55 of its
# 56): before the pause, the agent may see a short word's worth of it
# (the tail after " key=", seven bytes at most, SL_SCRUB_FLUSH_MAX),
# never more, and after it the rest replaced. The cut at 3 shows that a
# short tail still goes out at a pause ("key=" and three bytes).
r=$(res pause-cut)
n_mark=$(grep -o -F -- "$MARK" <<<"$r" | wc -l)
if [ "$(grep -o ' 200 early=' <<<"$r" | wc -l)" = 6 ] && [ "$n_mark" = 6 ] && ! leaks "$r"; then
	ok "pause-cut: six answers cut by a pause inside the key, none let out more than 7 bytes of it" \
		"(longest run $(key_run "$api_key" "$r")), each replaced"
else
	notok "pause-cut: want six 200s, each with '$MARK' and at most 7 key bytes in a row;" \
		"$n_mark markers, $(key_run "$api_key" "$r") key bytes in a row: $(show "${r:0:600}")"
fi
e3=$(sed -n 's/^cut 3 200 early= *\([^ ]*\) all=.*/\1/p' <<<"${r%% | *}")
check "pause-cut: a short tail (key= and 3 bytes) came before the pause" "key=${api_key:0:3}" "$e3"

# ---- 3. a key with whitespace around it in its file ----
r=$(res trim)
if [ "${r%% *}" = 200 ] && [[ $r == *"$MARK"* ]] && ! leaks "$r"; then
	ok "trim: the echoed key (its file's spaces and tabs trimmed off) is redacted"
else
	notok "trim: status '${r%% *}', marker $([[ $r == *"$MARK"* ]] && echo present || echo absent)," \
		"$(key_run "$trim_key" "$r") bytes of the trim key (${#trim_key} long) came back in a row"
fi

# ---- 4. websocket greetings ----
r=$(res ws-deflate)
read -r st how _ <<<"$r"
if [ "$st" = 101 ] && [ "$how" != no ] && [ -n "$how" ] && ! leaks "$r"; then
	ok "ws-deflate: the greeting ($how) does not hold the key"
else
	notok "ws-deflate: status '$st', greeting '$how', holding $(key_run "$api_key" "$r") bytes of" \
		"the key (${#api_key} long) in a row once inflated;" \
		"origin: $(olog /ws api.scrub.test | grep -c ' wsext=yes') upgrade(s) offered the extension"
fi
r=$(res ws-plain)
if [[ $r == "101 plain "* ]] && [[ $r == *"$MARK"* ]] && ! leaks "$r"; then
	ok "ws-plain (control): the greeting came with the key redacted"
else
	notok "ws-plain (control): want '101 plain' with '$MARK' and no key: $(show "$r")"
fi
# The greeting ends in a word ("over"): the scrubber holds
# those bytes back, and passes them on once the stream pauses, not only
# when it ends: a message is not kept from the agent until the next one.
if [[ $r == "101 plain open "* ]]; then
	ok "ws-plain: the greeting, which ends in a word, came while the websocket was open"
else
	notok "ws-plain: the greeting came only as the websocket closed: $(show "${r:0:40}")"
fi

# A greeting that ends in a long word, on a websocket that stays open
# with nothing more to say (a question answered, the next one not asked):
# more than a short word, which is all a pause passes on, so only the
# frame's end can let it out. It must come whole, while the socket is open.
r=$(res ws-long)
if [[ $r == "101 plain open "* ]] && [[ $r == *"$MARK"*"; acknowledged" ]] && ! leaks "$r"; then
	ok "ws-long: the greeting, which ends in a long word, came whole while the websocket was open"
else
	notok "ws-long: want '101 plain open ... $MARK...; acknowledged' and no key: $(show "${r:0:200}")"
fi
# The same in a frame with a 16-bit length, whose header comes in two
# reads: the frame the agent parses ends where its header says, in the
# greeting's last word.
r=$(res ws-big)
if [[ $r == "101 plain open "* ]] && [[ $r == *"$MARK"*"zzz acknowledged" ]] && ! leaks "$r"; then
	ok "ws-big: a 300-byte greeting, its header in two reads, came whole and scrubbed while open"
else
	notok "ws-big: want '101 plain open ... $MARK... zzz acknowledged' and no key: $(show "${r:0:120}")"
fi
# A message the origin fragments, cut ten bytes into the key, a ping
# between the fragments: the agent joins the fragments (as any client
# does), so the key must be replaced across the cut; the ping comes too.
r=$(res ws-frag)
if [[ $r == "101 msg="*"$MARK"*"; acknowledged ctl=9:keepalive open ops=1+ 9 0" ]] && ! leaks "$r"; then
	ok "ws-frag: a key cut across two fragments is replaced; the ping between them came; open"
else
	notok "ws-frag: want '101 msg=...$MARK...; acknowledged ctl=9:keepalive open' and no key:" \
		"$(show "${r:0:200}")"
fi
# A close frame whose reason quotes the key.
r=$(res ws-close)
if [[ $r == "101 msg="*"$MARK"*"; over ctl=8:"*"invalid x-api-key $MARK"*" closed ops=1 8" ]] && ! leaks "$r"; then
	ok "ws-close: a close frame's reason that quotes the key is scrubbed"
else
	notok "ws-close: want the close's reason with '$MARK' and no key: $(show "${r:0:240}")"
fi
# A close in the middle of a message: the close comes, and nothing of
# the message after it (RFC 6455 5.5.1), not even the word the scrubber
# held at the fragment's end.
r=$(res ws-close-mid)
check "ws-close-mid: after the origin's close, no frame of its unfinished message" \
	"101 msg=hello; status pending;  ctl=8:\\x03\\xe8 closed ops=1+ 8" "$r"
# A message that pauses after a short word ("pending", 7 bytes) in the
# middle: the pause timer sends that word on as a fragment of its own
# (frames 1+ 0+ 0); without the timer it would wait for the last fragment
# (1+ 0).
r=$(res ws-pause-mid)
check "ws-pause-mid: a short word before a pause mid-message went on at the pause" \
	"101 msg=status: pending done ctl= open ops=1+ 0+ 0" "$r"
# A masked frame from the origin: the agent unmasks it (the mask is in
# the frame), the scrubber could not have read it. The websocket ends
# instead (RFC 6455 5.1: a client closes on a masked frame); the 101 that
# came in the same read may or may not have been sent on before.
r=$(res ws-masked)
if { [[ $r == "101 no frame" ]] || [[ $r == "error EOFError"* ]]; } && ! leaks "$r"; then
	ok "ws-masked: a masked frame from the origin ends the websocket; nothing of it came ($r)"
else
	notok "ws-masked: want the websocket ended before any frame, no key: $(show "${r:0:200}")"
fi

# ---- 5. the client's side of a websocket ----
# Plain HTTP behind an allowed upgrade, to an origin that answers 101 and
# reads on as HTTP (a front that tunnels to an HTTP backend): a request
# nobody decided, were it passed on. In the upgrade's own record, or before
# the 101, the upgrade is refused (a client sends nothing before the 101,
# RFC 6455 4.1); after the 101 it is no frame ('G' has reserved bits) and
# ends the websocket.
check "ws-smuggle: HTTP in the upgrade's record: the upgrade is refused" "400 closed" "$(res ws-smuggle)"
check "ws-smuggle-late: HTTP before the 101: refused" "400 closed" "$(res ws-smuggle-late)"
check "ws-smuggle-after: HTTP after the 101: the websocket ends" "101 closed" "$(res ws-smuggle-after)"
check "no request behind an upgrade reached the origin (its log of request lines)" "0" \
	"$(grep -c '^GET /admin/keys' "$T/scrub.log")"
check "ws-smuggle's upgrade never reached the origin" "0" "$(grep -c '^GET /ws?then=http ' "$T/scrub.log")"
# Every frame from a client is masked (RFC 6455 5.1); the masked one before
# went up as it came.
check "ws-unmasked: an unmasked frame from the agent ends the websocket" "101 closed" "$(res ws-unmasked)"
check "ws-unmasked: the origin got the masked frame, as sent, and not the unmasked one" "1 0" \
	"$(grep -c '^WS /ws?echo=1 frame op=1 masked=yes data=hello-up$' "$T/scrub.log") $(grep -c '^WS /ws?echo=1 frame .*masked=no' "$T/scrub.log")"
check "ws-nokey: an upgrade with no Sec-WebSocket-Key is refused, and never went" "400 closed 0" \
	"$(res ws-nokey) $(grep -c '^GET /ws?then=http&nokey=1 ' "$T/scrub.log")"
# A 101 that does not answer the key (RFC 6455 4.2.2) is not the origin's
# websocket: a front that never switched protocols, or something else.
check "ws-accept-bad: a 101 with the wrong Sec-WebSocket-Accept gets a 502" "502 closed" "$(res ws-accept-bad)"
check "ws-accept-none: a 101 with no Sec-WebSocket-Accept gets a 502" "502 closed" "$(res ws-accept-none)"
check "ws-accept-spaced: the right accept with trailing whitespace is the right accept" "101 open" \
	"$(res ws-accept-spaced)"

# ---- what sluice wrote ----
audit=$(cat "$T/audit.log" 2>/dev/null)
if [ -z "$audit" ] || leaks "$audit"; then
	notok "the audit log is there and holds no run of 8 key bytes ($(wc -l <"$T/audit.log") records)"
else
	ok "the audit log is there and holds no run of 8 key bytes"
fi
check "the masked frame's websocket is recorded as a bad response" "1" \
	"$(audit_count '"path":"/ws?mask=1"' '"reason":"bad-response"')"
check "the unmasked frame's websocket is recorded as refused, ws-bad-frame" "1" \
	"$(audit_count '"path":"/ws?echo=1"' '"decision":"deny"' '"reason":"ws-bad-frame"')"
check "the wrong accept is recorded as a 502, bad-response" "1" \
	"$(audit_count '"path":"/ws?accept=bad"' '"status":502' '"reason":"bad-response"')"

finish
