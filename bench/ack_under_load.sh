#!/usr/bin/env bash
# Webhook acknowledgement latency on SQLite while another client loads the report and the
# approval console, on the 1M-invoice tenant that bench/admin_pages.py builds.
#
# Server: granian (bench/_server.sh), one worker pinned to CPU 0, $BENCH_THREADS blocking
# threads (default "1 4": each is measured). Loaders on CPU 1, back to back, one request in
# flight each: GET /report (bearer token) and GET the console's ?queue=all page 1000
# (logged-in finance user). Acks: ../shared/bench/httpbench.py signing Stripe deliveries,
# concurrency 1 and 16, measured first without the loaders, then with them.
#
# Usage: bench/ack_under_load.sh [requests-per-step]   (default 1000)
#   BENCH_SQLITE: the database bench/admin_pages.py built (default /tmp/pp-bench-admin.sqlite3)
#   BENCH_PORT (default 8101), BENCH_THREADS (default "1 4"), HTTPBENCH.
set -euo pipefail
cd "$(dirname "$0")/.."

REQUESTS="${1:-1000}"
PORT="${BENCH_PORT:-8101}"
DB="${BENCH_SQLITE:-/tmp/pp-bench-admin.sqlite3}"
PY="${PY:-.venv/bin/python}"
HTTPBENCH="${HTTPBENCH:-../shared/bench/httpbench.py}"
BODY=bench/webhook_stripe_body.json
SECRET="whsec_bench_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
WORK="$(mktemp -d /tmp/pp-bench-ackload.XXXXXX)"
. bench/_server.sh

[ -f "$DB" ] || { echo "no $DB: run bench/admin_pages.py --db sqlite first" >&2; exit 2; }
export DATABASE_URL="sqlite:///$DB" DJANGO_SETTINGS_MODULE=paypilot.settings DJANGO_DEBUG=0
export PAYPILOT_RATE_LIMIT_PER_TOKEN=0 PAYPILOT_RATE_LIMIT_PER_IP=0 PAYPILOT_LOG_LEVEL=WARNING
export PAYPILOT_Q_SYNC=0 PAYPILOT_HOLDOUT_PCT=0 BENCH_STRIPE_SECRET="$SECRET"

SERVER_PID=""
LOADERS=()
stop_loaders() {
  for pid in "${LOADERS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  LOADERS=()
}
cleanup() {
  stop_loaders
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

"$PY" manage.py migrate --noinput -v0
"$PY" manage.py webhook_credential --tenant bench --provider stripe --secret-env BENCH_STRIPE_SECRET >/dev/null
# A report token and a logged-in session for the finance user admin_pages.py created.
read -r TOKEN SESSION < <("$PY" manage.py shell -v0 -c '
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from paypilot.models import Tenant
from paypilot.services import token_issue
user = User.objects.get(username="bench-finance")
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(token_issue(tenant=Tenant.objects.get(slug="bench"), role="viewer").plaintext, session.session_key)' | tail -n 1)

acks() {  # label: one ack ladder, prints its summary lines
  "$PY" "$HTTPBENCH" --url "http://127.0.0.1:$PORT" --route /t/bench/webhooks/stripe --method POST \
    --body-file "$BODY" --stripe-secret "$SECRET" --expect-status 200 --ladder 1,16 -n "$REQUESTS" \
    --repeat 1 --cpu 1 --server-pid "$SERVER_PID" --label "$1" -o "$WORK/$1.json" --timeout 30 \
    | grep -E '^median|error|timeout' || true
}

loader() {  # route, header: back-to-back GETs for up to 10 minutes (killed when the acks end)
  "$PY" "$HTTPBENCH" --url "http://127.0.0.1:$PORT" --route "$1" --method GET -H "$2" --ladder 1 \
    -n 100000 --repeat 1 --cpu 1 --step-timeout 600 --max-total 600 --label loader -q \
    -o "$WORK/loader-$RANDOM.json" >/dev/null 2>&1 &
  LOADERS+=($!)
}

for threads in ${BENCH_THREADS:-1 4}; do
  start_server "$PORT" "$threads" "$WORK/server.log"
  wait_for_server "$PORT" "$WORK/server.log"
  echo
  echo "=== $SERVER_DESC, SQLite at $(du -h "$DB" | cut -f1) ==="
  echo "--- acks alone"
  acks "alone-$threads"
  echo "--- acks while GET /report and GET the console (?queue=all, page 1000) run back to back"
  loader /report "Authorization: Bearer $TOKEN"
  loader "/admin/approvals/approvalrequest/?queue=all&p=1000" "Cookie: sessionid=$SESSION"
  sleep 2
  acks "loaded-$threads"
  # What the loaders achieved meanwhile (one request in flight each).
  for url in /report "/admin/approvals/approvalrequest/?queue=all&p=1000"; do
    hdr="Authorization: Bearer $TOKEN"; [ "$url" = /report ] || hdr="Cookie: sessionid=$SESSION"
    curl -s -o /dev/null -w "  loader sample $url: %{http_code} in %{time_total}s\n" -H "$hdr" "http://127.0.0.1:$PORT$url"
  done
  stop_loaders
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
done
