#!/usr/bin/env bash
# Benchmark POST /payment-failed (template path, nothing persisted) on SQLite.
# Server: granian or gunicorn (BENCH_SERVER, see bench/_server.sh), one worker pinned to CPU 0; generator: ../shared/bench/httpbench.py
# on CPU 1. Six demo customers are on record; the bodies (bench/payment_failed_bodies.jsonl)
# cycle through five of them and one customer not on record, across locales and codes.
# Usage: bench/payment_failed.sh [ladder] [requests-per-step]   (defaults: 1,4,16,64 and 2000)
set -euo pipefail
cd "$(dirname "$0")/.."

LADDER="${1:-1,4,16,64}"
REQUESTS="${2:-2000}"
PORT="${BENCH_PORT:-18451}"
THREADS="${BENCH_THREADS:-1}"  # measured best on one core: the views are CPU-bound Python
PY=.venv/bin/python
HTTPBENCH="${HTTPBENCH:-../shared/bench/httpbench.py}"
WORK="$(mktemp -d /tmp/pp-bench-payment-failed.XXXXXX)"

export DATABASE_URL="sqlite:///$WORK/bench.sqlite3"
export DJANGO_SETTINGS_MODULE=paypilot.settings
export PAYPILOT_RATE_LIMIT_PER_TOKEN=0 PAYPILOT_RATE_LIMIT_PER_IP=0 PAYPILOT_LOG_LEVEL=WARNING
export DJANGO_DEBUG=0 OPENAI_API_KEY="" PAYPILOT_LLM_DRAFT=0

if curl -s -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null; then
  echo "port $PORT is already in use; set BENCH_PORT" >&2
  exit 1
fi

"$PY" manage.py migrate --noinput -v0
TOKEN="$("$PY" manage.py shell -c '
from paypilot.services import tenant_create, token_issue
from ledger.services import customer_upsert
t = tenant_create(slug="bench", name="Bench Ltd")
rows = [("cust_001", "Acme Robotics", "Scale", "", "USD"), ("cust_002", "Brightleaf Studios", "Pro", "es", "EUR"),
        ("cust_003", "Nimbus Health", "Enterprise", "de-DE", "USD"), ("cust_004", "Pixel & Pour", "Starter", "fr", "USD"),
        ("cust_005", "Orbital Logistics", "Scale", "en-GB", "GBP"), ("cust_006", "Verdant Outdoor", "Pro", "", "USD")]
for cid, name, plan, locale, cur in rows:
    customer_upsert(tenant=t, external_id=cid, name=name, plan=plan, locale=locale, currency=cur, mrr_minor=29900,
                    payment_history=[{"status": "ok"}, {"status": "failed"}, {"status": "failed"}])
print(token_issue(tenant=t, role="integrator").plaintext)
' | tail -n 1)"

. bench/_server.sh
start_server "$PORT" "$THREADS" "$WORK/server.log"
cleanup() { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

wait_for_server "$PORT" "$WORK/server.log"

echo "server: $SERVER_DESC, taskset -c 0, SQLite (WAL), rate limits off, log level WARNING"
"$PY" "$HTTPBENCH" --url "http://127.0.0.1:$PORT" --route /payment-failed --method POST \
  --body-file bench/payment_failed_bodies.jsonl \
  -H "Authorization: Bearer $TOKEN" --expect-status 200 --expect-body '"rules_version"' \
  --ladder "$LADDER" -n "$REQUESTS" --repeat 3 --cpu 1 --server-pid "$SERVER_PID" --label payment-failed
