#!/usr/bin/env bash
# Benchmark POST /decide (decision + audit row written) on SQLite.
# Server: granian or gunicorn (BENCH_SERVER, see bench/_server.sh), one worker pinned to CPU 0; generator: ../shared/bench/httpbench.py on CPU 1.
# Usage: bench/decide.sh [ladder] [requests-per-step]   (defaults: 1,4,16,64 and 2000)
set -euo pipefail
cd "$(dirname "$0")/.."

LADDER="${1:-1,4,16,64}"
REQUESTS="${2:-2000}"
PORT="${BENCH_PORT:-18431}"
# One thread: the request is CPU-bound Python, so under the GIL extra threads on one core
# only add switching (measured: 1 thread beat 2, 4 and 8 at concurrency 16).
THREADS="${BENCH_THREADS:-1}"
PY=.venv/bin/python
HTTPBENCH="${HTTPBENCH:-../shared/bench/httpbench.py}"
WORK="$(mktemp -d /tmp/pp-bench-decide.XXXXXX)"

export DATABASE_URL="sqlite:///$WORK/bench.sqlite3"
export DJANGO_SETTINGS_MODULE=paypilot.settings
export PAYPILOT_RATE_LIMIT_PER_TOKEN=0 PAYPILOT_RATE_LIMIT_PER_IP=0 PAYPILOT_LOG_LEVEL=WARNING
export DJANGO_DEBUG=0

if curl -s -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null; then
  echo "port $PORT is already in use; set BENCH_PORT" >&2
  exit 1
fi

"$PY" manage.py migrate --noinput -v0
TOKEN="$("$PY" manage.py shell -c '
from paypilot.services import tenant_create, token_issue
t = tenant_create(slug="bench", name="Bench")
print(token_issue(tenant=t, role="integrator").plaintext)
' | tail -n 1)"

. bench/_server.sh
start_server "$PORT" "$THREADS" "$WORK/server.log"
cleanup() { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

wait_for_server "$PORT" "$WORK/server.log"

echo "server: $SERVER_DESC, taskset -c 0, SQLite (WAL), rate limits off, log level WARNING"
"$PY" "$HTTPBENCH" --url "http://127.0.0.1:$PORT" --route /decide --method POST \
  --body '{"invoice_id":"in_{n}","failure_code":"insufficient_funds","attempt":2,"prior_failures":1}' \
  -H "Authorization: Bearer $TOKEN" --expect-status 200 \
  --ladder "$LADDER" -n "$REQUESTS" --repeat 3 --cpu 1 --server-pid "$SERVER_PID" --label decide

ROWS="$("$PY" manage.py shell -c 'from decisions.models import DecisionRecord; print(DecisionRecord.objects.count())' | tail -n 1)"
echo "decision rows written: $ROWS"
