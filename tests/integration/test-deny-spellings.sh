#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Deny rules that name paths, against spellings a server routes to the
# denied path: a format suffix (Rails routes every `get "/admin"` as
# "/admin(.:format)", so /admin.json runs the admin action; Spring MVC's
# suffix pattern matching, on by default before 5.3, does the same), and
# PATH_INFO behind a PHP front controller (Laravel, Symfony, CodeIgniter
# route /index.php/admin as /admin; nginx's usual try_files sends it to
# index.php, and its "location /admin" does not see it). The
# origin here routes as Rails' router does and logs the action it ran: the
# evidence is that no denied action ran, and that the gateway refused (403,
# reason deny-rule) each spelling.
#
# Usage: test-deny-spellings.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-deny-spellings.sh ip nft nsenter python3 curl dnsmasq openssl

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
R=203.0.113.4 # the Rails-like origin, in the internet namespace only
world_net ip addr add "$R/32" dev lo || { echo "not ok - $R"; exit 1; }
world_services app.test="$R" || { echo "not ok - services"; exit 1; }

cat >"$T/rails-origin.py" <<'PY'
# rails-origin.py LOG ADDR: routes as Rails' Journey router does for
# `get "/admin"`, `resources :internal` and `get "/public"`: each route
# takes an optional ".:format" (a segment of [^/.?]+), a trailing "/" is
# dropped, case matters. Logs "ran ACTION path=PATH" or "no-route PATH".
import http.server, re, socketserver, sys
log_path, addr = sys.argv[1:3]
ROUTES = [("admin#index", r"/admin"), ("internal#index", r"/internal"),
          ("internal#show", r"/internal/[^/.?]+"), ("public#index", r"/public")]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?", 1)[0]
        # Behind a PHP front controller (Laravel, Symfony, CodeIgniter):
        # /index.php/admin is SCRIPT_NAME /index.php, PATH_INFO /admin.
        m = re.match(r"(?i)/(?:[^/]+/)*?[^/]+\.php(/.*)?$", path)
        if m:
            path = m.group(1) or "/"
        if len(path) > 1:
            path = path.rstrip("/")
        action = next((a for a, p in ROUTES if re.fullmatch(p + r"(?:\.[^/.?]+)?", path)), None)
        with open(log_path, "a") as f:
            f.write(("ran %s path=%s" % (action, self.path)) if action else "no-route %s" % self.path)
            f.write("\n")
        body = (action or "none").encode() + b"\n"
        self.send_response(200 if action else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S((addr, 80), H)
open(log_path + ".ready", "w").close()
s.serve_forever()
PY
world_bg "$WORLD_NET" python3 "$T/rails-origin.py" "$T/rails.log" "$R"
wait_for_file "$T/rails.log.ready" || { echo "not ok - the origin did not start"; exit 1; }
touch "$T/rails.log"

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: app.test
    ports: [80]
deny:
  - host: app.test
    paths: ["/admin", "/internal/*"]
private_addresses: deny
P
GW=203.0.113.1:3128
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" --listen $GW \
	--resolver "$N:53" --audit "$T/audit.log" --sandbox spell || exit 1

get() { world_host curl -s -m 10 -o /dev/null -w '%{http_code}' -x "http://$GW" "http://app.test$1"; }

check "the control: an allowed path runs its action" "200" "$(get /public)"
check "... and a suffixed one too (the origin routes formats)" "200" "$(get /public.json)"
check "the denied path itself: 403" "403" "$(get /admin)"
for p in /admin.json /Admin.JSON /admin.json/ /admin.xml?x=1 /admin.json\;p=1 /internal.json /internal/5.json; do
	check "a format suffix on a denied path ($p): 403" "403" "$(get "$p")"
done
for p in /index.php/admin /index.php/admin.json /INDEX.PHP/admin/ /public/index.php/internal/5 /index.php/x.php/admin; do
	check "PATH_INFO behind a front controller ($p): 403" "403" "$(get "$p")"
done
check "... and the control: the front controller's own allowed path, 200" "200" "$(get /index.php/public)"
check "no denied action ran at the origin" "" "$(grep -v 'ran public#index' "$T/rails.log" | grep '^ran ')"
check "... each refusal audited, by the deny rule" "13" \
	"$(grep '"decision":"deny"' "$T/audit.log" | grep -c '"reason":"deny-rule"')"
check "the canary saw nothing" "0" "$(world_canary_count)"
finish
