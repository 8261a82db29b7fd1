# SPDX-License-Identifier: MIT
"""metrics-check.py SCRAPE AUDIT.log [SECRET-FILE...]

Checks one scrape of `--metrics` against the audit log written up to it:
parsed by Prometheus' own parser (python3-prometheus-client), then every
counter the log can say is compared with what the log says (requests by
event, decision and reason; bytes up and down; DNS queries by answer;
credential injections by secret name; blocked packets logged; the
histograms' counts), and no secret's value may appear in the scrape.
Prints TAP-ish "ok - ..." / "not ok - ..." lines; exits 1 if any failed.
"""
import collections
import json
import re
import sys

from prometheus_client.parser import text_string_to_metric_families

scrape_path, audit_path, secret_files = sys.argv[1], sys.argv[2], sys.argv[3:]
text = open(scrape_path, encoding="utf-8").read()
failed = 0


def check(name, want, got):
    global failed
    if want == got:
        print("ok - %s" % name)
    else:
        failed += 1
        print("not ok - %s: got %r, want %r" % (name, got, want))


try:
    families = list(text_string_to_metric_families(text))
    check("the scrape parses as Prometheus text", True, True)
except Exception as e:  # the parser's own error says where
    check("the scrape parses as Prometheus text (%s)" % e, True, False)
    sys.exit(1)

types = {f.name: f.type for f in families}
samples = collections.defaultdict(dict)
for f in families:
    for s in f.samples:
        samples[s.name][tuple(sorted(s.labels.items()))] = s.value

# Every sample line has its family's HELP and TYPE first (the parser takes
# lines without them as untyped: say so).
check("every family has a HELP and a TYPE", [],
      [f.name for f in families if f.type == "unknown" or not f.documentation])
check("requests are a counter", "counter", types.get("sluice_requests"))
check("open connections are a gauge", "gauge", types.get("sluice_open_connections"))
check("durations are a histogram", "histogram", types.get("sluice_request_duration_seconds"))
check("approval waits are a histogram", "histogram", types.get("sluice_approval_wait_seconds"))

# Histograms: buckets cumulative, +Inf the count.
bad = []
for name in ("sluice_request_duration_seconds", "sluice_approval_wait_seconds"):
    series = collections.defaultdict(list)
    for labels, v in samples[name + "_bucket"].items():
        d = dict(labels)
        le = d.pop("le")
        series[tuple(sorted(d.items()))].append((float(le), v))
    for key, buckets in series.items():
        buckets.sort()
        values = [v for _, v in buckets]
        if values != sorted(values) or buckets[-1][0] != float("inf"):
            bad.append((name, key, "not cumulative"))
        if samples[name + "_count"].get(key) != buckets[-1][1]:
            bad.append((name, key, "+Inf is not the count"))
check("histogram buckets are cumulative and end in +Inf = _count", [], bad)

records = [json.loads(l) for l in open(audit_path, encoding="utf-8") if l.strip()]


def reason_label(r):
    reason = r.get("reason")
    if not reason:
        return "other"
    head = reason.split(":", 1)[0]
    return head if re.fullmatch(r"[a-z0-9-]{1,64}", head) else "other"


def summary(r):
    reason = r.get("reason") or ""
    return (r.get("client") is None and r.get("host") is None and
            re.search(r": [0-9]", reason) is not None)


want = collections.Counter()
for r in records:
    want[(("decision", r["decision"]), ("event", r["event"]), ("reason", reason_label(r)))] += 1
got = {k: int(v) for k, v in samples["sluice_requests_total"].items() if v}
check("requests by event, decision and reason = the audit log's records (%d)" % len(records),
      dict(want), got)

for direction in ("up", "down"):
    for event in ("http", "connect"):
        total = sum(r["bytes_" + direction] for r in records
                    if r["event"] == event and (r.get("bytes_" + direction) or 0) > 0)
        got = samples["sluice_bytes_total"].get(
            (("direction", direction), ("event", event)))
        check("bytes %s of %s = the log's sum (%d)" % (direction, event, total), total,
              int(got or 0))

rcodes = {0: "noerror", 1: "formerr", 2: "servfail", 3: "nxdomain", 4: "notimp", 5: "refused"}
want = collections.Counter()
for r in records:
    if r["event"] == "dns" and not summary(r):
        st = r.get("status")
        want["none" if st is None else rcodes.get(st, "other")] += 1
got = {dict(k)["answer"]: int(v) for k, v in samples["sluice_dns_queries_total"].items() if v}
check("DNS queries by answer = the log's dns records by status", dict(want), got)

want = collections.Counter(r["credential"] for r in records if r.get("credential"))
got = {dict(k)["secret"]: int(v)
       for k, v in samples["sluice_credential_injections_total"].items()}
check("injections by secret name = the log's credential fields", dict(want), got)

n = sum(1 for r in records if r["event"] == "blocked" and r.get("reason") == "blocked-packet")
got = samples["sluice_blocked_packets_total"].get((("audit", "logged"),))
check("blocked packets logged = the log's blocked-packet records (%d)" % n, n, int(got or 0))

for event in ("http", "connect", "dns"):
    n = sum(1 for r in records if r["event"] == event and not summary(r)
            and r.get("duration_ms") is not None)
    got = samples["sluice_request_duration_seconds_count"].get((("event", event),))
    check("durations of %s observed = the log's records with a duration (%d)" % (event, n), n,
          int(got or 0))

for f in secret_files:
    value = open(f, encoding="utf-8").read().strip()
    if value in text:
        failed += 1
        print("not ok - a secret's value is in the scrape (%s)" % f)
    else:
        print("ok - the secret in %s is not in the scrape" % f)
sys.exit(1 if failed else 0)
