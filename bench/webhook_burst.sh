#!/usr/bin/env bash
# Issue 18 acceptance through a real server: a burst of 200 signed Stripe deliveries from
# one address, with the per-IP API limit far below it, must all be accepted (200); then
# 200 unsigned ones must get 400 (audited) up to PAYPILOT_WEBHOOK_FAILURES_PER_IP and 429
# past it, with nothing stored. The database is counted at the end.
#
# granian (or gunicorn: BENCH_SERVER) with 1 worker pinned to CPU 0, a fresh SQLite
# database in a temporary directory, no qcluster (the acknowledgement path only: events stay
# `received`). ../shared/bench/httpbench.py signs each request like Stripe.
#
# Usage: bench/webhook_burst.sh [concurrency] [requests]   defaults: 16, 200
set -euo pipefail
cd "$(dirname "$0")/.."

CONC="${1:-16}"
REQUESTS="${2:-200}"
PORT="${BENCH_PORT:-8102}"
VENV="${BENCH_VENV:-.venv}"
[ -x "$VENV/bin/python" ] || VENV=/work/main/.venv
PY="$VENV/bin/python"
HTTPBENCH="${HTTPBENCH:-../shared/bench/httpbench.py}"
[ -f "$HTTPBENCH" ] || HTTPBENCH=/work/shared/bench/httpbench.py
SECRET=whsec_bench_burst_0123456789

work="$(mktemp -d -t pp-bench-burst.XXXXXX)"
mkdir -p "$work/rl"
export DATABASE_URL="sqlite:///$work/bench.sqlite3"
export PAYPILOT_RATE_LIMIT_DIR="$work/rl" REDIS_URL="" PAYPILOT_LOG_LEVEL=WARNING
export PAYPILOT_RATE_LIMIT_PER_IP=50 PAYPILOT_WEBHOOK_FAILURES_PER_IP=60 PAYPILOT_WEBHOOK_FAILURES_PER_TENANT=0
export DJANGO_SETTINGS_MODULE=paypilot.settings

"$PY" manage.py migrate --noinput -v0
"$PY" - <<EOF
import django; django.setup()
from integrations.services import credential_set
from paypilot.services import tenant_create
credential_set(tenant=tenant_create(slug="burst", name="Burst"), provider="stripe", secret="$SECRET")
EOF

# bench/_server.sh expects .venv/bin: start the server here with the chosen venv.
case "${BENCH_SERVER:-granian}" in
  granian) taskset -c 0 "$VENV/bin/granian" --interface wsgi --host 127.0.0.1 --port "$PORT" --workers 1 \
             --blocking-threads 1 --no-ws --log-level warning paypilot.wsgi:application >"$work/server.log" 2>&1 & ;;
  gunicorn) taskset -c 0 "$VENV/bin/gunicorn" paypilot.wsgi:application --bind "127.0.0.1:$PORT" --workers 1 \
              --worker-class gthread --threads 4 --log-level warning >"$work/server.log" 2>&1 & ;;
esac
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.2
done

echo "== $REQUESTS signed deliveries, concurrency $CONC, one address (per-IP API limit 50) =="
taskset -c 1 "$PY" "$HTTPBENCH" --url "http://127.0.0.1:$PORT" --route /t/burst/webhooks/stripe \
  --body-file bench/webhook_stripe_body.json --stripe-secret "$SECRET" --ladder "$CONC" -n "$REQUESTS" \
  --warmup 0 --repeat 1 --server-pid "$SERVER_PID"
echo "== $REQUESTS unsigned deliveries (failure limit 60 per address) =="
taskset -c 1 "$PY" "$HTTPBENCH" --url "http://127.0.0.1:$PORT" --route /t/burst/webhooks/stripe \
  --body-file bench/webhook_stripe_body.json --ladder "$CONC" -n "$REQUESTS" \
  --warmup 0 --repeat 1 --server-pid "$SERVER_PID"

"$PY" - <<'EOF'
import django; django.setup()
from integrations.models import WebhookEvent
from paypilot.models import AuditEvent
print(f"stored events: {WebhookEvent.objects.count()}, rejection audit rows: "
      f"{AuditEvent.objects.filter(event='integrations.webhook.rejected').count()}")
EOF
