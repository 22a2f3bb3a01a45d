#!/usr/bin/env bash
# Benchmark signed Stripe webhook deliveries (unique event ids) into the inbox, then drain
# the inbox with one django-q2 worker, on SQLite and on PostgreSQL.
#
# Ack phase: granian or gunicorn (BENCH_SERVER, bench/_server.sh), 1 worker pinned to CPU 0; ../shared/bench/httpbench.py on
# CPU 1 signs each request like Stripe (--stripe-secret) and makes ids unique ({uuid}).
# Drain phase: `manage.py qcluster` with one worker, the whole cluster pinned to CPU 0,
# turns every stored delivery into ledger invoice + decision + draft + approval request.
# At the end the database is counted: every delivery must be processed exactly once.
#
# Usage: bench/webhooks.sh [sqlite|postgres|both] [ladder] [requests-per-step]
#   defaults: both, 1,16,64, 2000. PostgreSQL: $BENCH_PG_URL
#   (default postgres://postgres@127.0.0.1:5432/pp_integrations_bench, dropped and recreated).
#   BENCH_SAVE_INBOX=NAME (PostgreSQL): after the acknowledgements, keep a copy of the inbox
#   as database NAME; BENCH_INBOX=NAME: skip the acknowledgements and drain a fresh copy of
#   it (repeatable drains of one backlog). BENCH_WORKERS=N: N qcluster workers (default 1).
#   Drain figures: events per second, and the CPU
#   (user + system) of every cluster process and of the database's PostgreSQL backends;
#   before the acknowledgements and the drain, the CPU's speed at that moment (bench/_machine.py), and
#   each figure's ratio to the previous release's (bench/_previous.py).
set -euo pipefail
cd "$(dirname "$0")/.."

WHICH="${1:-both}"
LADDER="${2:-1,16,64}"
REQUESTS="${3:-2000}"
REPEAT="${BENCH_REPEAT:-3}"
PORT="${BENCH_PORT:-18766}"
# Threads per database, measured best at concurrency 64 (docs/benchmarks.md): SQLite 1 (more
# threads only queue on its one write lock and its busy-wait sleeps: 8 threads gave 739/s,
# p99 176 ms, against 1,011/s, p99 91 ms, with 1); PostgreSQL 4 (threads overlap the round
# trips; 8 gave 815/s, p99 139 ms, against 892/s, p99 83 ms, with 4). BENCH_THREADS overrides.
threads_for() { [ -n "${BENCH_THREADS:-}" ] && echo "$BENCH_THREADS" || { [ "$1" = sqlite ] && echo 1 || echo 4; }; }
PG_URL="${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/pp_integrations_bench}"
PY="${PY:-.venv/bin/python}"
. bench/_server.sh
HTTPBENCH="${HTTPBENCH:-../shared/bench/httpbench.py}"
BODY=bench/webhook_stripe_body.json
SECRET="whsec_bench_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
WORK="$(mktemp -d /tmp/pp-bench-webhooks.XXXXXX)"

export DJANGO_SETTINGS_MODULE=paypilot.settings DJANGO_DEBUG=0
export PAYPILOT_RATE_LIMIT_PER_TOKEN=0 PAYPILOT_RATE_LIMIT_PER_IP=0 PAYPILOT_LOG_LEVEL=WARNING
export PAYPILOT_Q_SYNC=0 PAYPILOT_Q_WORKERS="${BENCH_WORKERS:-1}" PAYPILOT_HOLDOUT_PCT=0
export BENCH_STRIPE_SECRET="$SECRET"

SERVER_PID=""
CLUSTER_PID=""
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  [ -n "$CLUSTER_PID" ] && kill "$CLUSTER_PID" 2>/dev/null && wait "$CLUSTER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

pg_copy() {  # ADMIN_URL NAME [TEMPLATE]: drop database NAME and create it (empty or as a copy)
  "$PY" - "$@" <<'PYEOF'
import sys, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    conn.execute(f'DROP DATABASE IF EXISTS "{sys.argv[2]}" WITH (FORCE)')
    template = f' TEMPLATE "{sys.argv[3]}"' if len(sys.argv) > 3 and sys.argv[3] else ""
    conn.execute(f'CREATE DATABASE "{sys.argv[2]}"{template}')
PYEOF
}

count() {  # one JSON line with the exactly-once counts
  "$PY" manage.py shell -v0 -c '
import json
from django.db.models import Count, Max, Min
from approvals.models import ApprovalRequest
from decisions.models import DecisionRecord
from dunning.models import Draft
from integrations.models import WebhookEvent
from ledger.models import Invoice, InvoiceTransition
ev = WebhookEvent.objects
span = ev.filter(status="processed").aggregate(first=Min("processed_at"), last=Max("processed_at"))
print(json.dumps({
  "events": ev.count(),
  "received": ev.filter(status="received").count(),
  "processed": ev.filter(status="processed").count(),
  "failed": ev.filter(status="failed").count(),
  "processed_more_than_once": ev.filter(attempts__gt=1).count(),
  "invoices": Invoice.objects.count(),
  "transitions": InvoiceTransition.objects.count(),
  "decisions": DecisionRecord.objects.count(),
  "drafts": Draft.objects.count(),
  "approval_requests": ApprovalRequest.objects.count(),
  "duplicate_invoice_ids": Invoice.objects.values("external_invoice_id").annotate(n=Count("id")).filter(n__gt=1).count(),
  "drain_span_s": (span["last"] - span["first"]).total_seconds() if span["first"] else None,
}))' | tail -n 1
}

run_one() {
  local db="$1"
  if [ "$db" = sqlite ]; then
    export DATABASE_URL="sqlite:///$WORK/bench.sqlite3"
    rm -f "$WORK"/bench.sqlite3*
  else
    export DATABASE_URL="$PG_URL"
    local admin_url="${PG_URL%/*}/postgres" name="${PG_URL##*/}"
    pg_copy "$admin_url" "$name" "${BENCH_INBOX:-}"
  fi
  "$PY" manage.py migrate --noinput -v0
  if [ -n "${BENCH_INBOX:-}" ] && [ "$db" = postgres ]; then
    echo "=== $db: inbox copied from database $BENCH_INBOX (no acknowledgement phase) ==="
    drain "$db"; return
  fi
  "$PY" manage.py shell -v0 -c 'from paypilot.services import tenant_create; tenant_create(slug="bench", name="Bench")'
  "$PY" manage.py webhook_credential --tenant bench --provider stripe --secret-env BENCH_STRIPE_SECRET >/dev/null

  start_server "$PORT" "$(threads_for "$db")" "$WORK/server-$db.log"
  wait_for_server "$PORT" "$WORK/server-$db.log"

  echo
  echo "=== $db: acknowledge signed Stripe deliveries ==="
  echo "server: $SERVER_DESC, taskset -c 0; enqueue = ORM broker row in the same transaction"
  local speed
  speed="$(taskset -c 0 "$PY" -c 'import sys; sys.path.insert(0, "bench"); import _machine; print(f"{_machine.reference_seconds():.3f}")')"
  echo "machine speed (CPU 0): a 10,000,000-step Python loop took $speed s of CPU"
  "$PY" "$HTTPBENCH" --url "http://127.0.0.1:$PORT" --route /t/bench/webhooks/stripe --method POST \
    --body-file "$BODY" --stripe-secret "$SECRET" --expect-status 200 --expect-body '"duplicate": false' \
    --ladder "$LADDER" -n "$REQUESTS" --repeat "$REPEAT" --cpu 1 --server-pid "$SERVER_PID" \
    --label "webhooks-$db" -o "$WORK/ack-$db.json"
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
  echo "against the previous release (bench/_previous.py):"
  "$PY" bench/_previous.py ack "$db" "$WORK/ack-$db.json" "$speed"
  if [ -n "${BENCH_SAVE_INBOX:-}" ] && [ "$db" = postgres ]; then
    pg_copy "${PG_URL%/*}/postgres" "$BENCH_SAVE_INBOX" "${PG_URL##*/}"
    echo "inbox saved as database $BENCH_SAVE_INBOX (BENCH_INBOX=$BENCH_SAVE_INBOX drains a copy of it again)"
  fi
  if [ "${BENCH_DRAIN:-1}" = 0 ]; then return; fi
  drain "$db"
}

drain() {
  local db="$1"
  local before
  before="$(count)"
  echo "stored before drain: $before"
  local speed  # the speed of the drain's CPU just before it
  speed="$(taskset -c 0 "$PY" -c 'import sys; sys.path.insert(0, "bench"); import _machine; print(f"{_machine.reference_seconds():.3f}")')"
  echo "machine speed (CPU 0): a 10,000,000-step Python loop took $speed s of CPU"

  echo "=== $db: drain the inbox with $PAYPILOT_Q_WORKERS qcluster worker(s) on CPU 0 (load average: $(cut -d' ' -f1-3 /proc/loadavg)) ==="
  local start end usage
  start="$(date +%s.%N)"
  taskset -c 0 "$PY" manage.py qcluster >"$WORK/qcluster-$db.log" 2>&1 &
  CLUSTER_PID=$!
  # done when no event is left received and no task is left queued (the tasks of events
  # that an earlier batch processed still pass through the worker); samples the CPU of the
  # cluster's processes and of the database's PostgreSQL backends on the way
  if ! usage="$("$PY" bench/_drain_watch.py "$DATABASE_URL" "$CLUSTER_PID")"; then
    echo "qcluster died"; tail -20 "$WORK/qcluster-$db.log"; exit 1
  fi
  end="$(date +%s.%N)"
  kill "$CLUSTER_PID"; wait "$CLUSTER_PID" 2>/dev/null || true; CLUSTER_PID=""
  local after
  after="$(count)"
  echo "after drain: $after"
  echo "cpu: $usage"
  "$PY" - "$after" "$start" "$end" "$usage" "$db" "$speed" <<'PYEOF'
import json, sys
sys.path.insert(0, "bench")
from _previous import ratio_line
c = json.loads(sys.argv[1]); wall = float(sys.argv[3]) - float(sys.argv[2]); u = json.loads(sys.argv[4])
n = c["processed"]
exact = (c["received"] == 0 and c["failed"] == 0 and c["processed"] == c["events"]
         and c["processed_more_than_once"] == 0
         and c["invoices"] == c["transitions"] == c["decisions"] == c["drafts"] == c["approval_requests"] == c["events"]
         and c["duplicate_invoice_ids"] == 0)
span = c["drain_span_s"] or float("nan")
print(f"drain: {n} deliveries; {n / span:.0f}/s between first and last processed "
      f"({span:.1f} s); {n / wall:.0f}/s wall clock until the inbox and the task queue are empty, "
      f"incl. cluster start-up and 0.5 s polling ({wall:.1f} s)")
print(f"cluster CPU (user+system, every cluster process): {u['cluster_cpu_s']:.1f} s = "
      f"{n / u['cluster_cpu_s']:.0f} deliveries per cluster CPU-second"
      + (f"; PostgreSQL backends: {u['pg_backend_cpu_s']:.1f} s" if u["pg_backend_cpu_s"] is not None else "")
      + f"; load average at the end {u['loadavg'][0]:.2f}")
print(f"exactly once: {'yes' if exact else 'NO'}")
print(ratio_line(f"drain_{sys.argv[5]}", n / span, float(sys.argv[6])))
PYEOF
}

case "$WHICH" in
  sqlite) run_one sqlite ;;
  postgres) run_one postgres ;;
  both) run_one sqlite; run_one postgres ;;
  *) echo "usage: $0 [sqlite|postgres|both] [ladder] [requests]"; exit 2 ;;
esac
