#!/usr/bin/env bash
# Runs every command of docs/deploy.md, in order, against the local PostgreSQL and Redis with
# throwaway roles and databases: roles, migrate, pg_roles, RLS check, a granian web process
# and a qcluster worker connected as the application role, operations, dump and restore.
# Exit 0 means every step worked. Needs PostgreSQL (superuser "postgres", trust or PGPASSWORD)
# and Redis; PG_HOST/PG_PORT/REDIS_URL override the local defaults.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_HOST=${PG_HOST:-127.0.0.1}
PG_PORT=${PG_PORT:-5432}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/15}
PY=.venv/bin/python
run_id="$$"
DB="pp_deploy_$run_id"
RESTORE_DB="pp_restore_$run_id"
OWNER="pp_owner_$run_id"
APP="pp_app_$run_id"
WORK=$(mktemp -d)
PORT=$((20000 + run_id % 20000))
pids=()

cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  for db in "$DB" "$RESTORE_DB"; do
    dropdb --if-exists -h "$PG_HOST" -p "$PG_PORT" -U postgres "$db" >/dev/null 2>&1 || true
  done
  for role in "$APP" "$OWNER"; do
    dropuser --if-exists -h "$PG_HOST" -p "$PG_PORT" -U postgres "$role" >/dev/null 2>&1 || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
step() { echo "== $*"; }

# Production-like environment (docs/configuration.md), shared by every process below.
export DJANGO_SECRET_KEY="$(head -c 48 /dev/urandom | base64 | tr -d "/+=\n")$(head -c 48 /dev/urandom | base64 | tr -d "/+=\n")"
export PAYPILOT_REQUIRE_SECRET_KEY=1 DJANGO_ALLOWED_HOSTS=127.0.0.1,localhost
# PAYPILOT_TLS=1 as docs/deploy.md says: HTTPS redirect, secure cookies, a year of HSTS.
export PAYPILOT_TLS=1 DJANGO_BEHIND_TLS_PROXY=1
export PAYPILOT_PII_SALT="smoke-salt-$run_id" DJANGO_STATIC_ROOT="$WORK/static"
export REDIS_URL
unset PAYPILOT_TESTING PAYPILOT_Q_SYNC
OWNER_URL="postgres://$OWNER@$PG_HOST:$PG_PORT/$DB"
APP_URL="postgres://$APP:app-password@$PG_HOST:$PG_PORT/$DB"

step "once, as a superuser: owner role and database"
createuser -h "$PG_HOST" -p "$PG_PORT" -U postgres --createrole --login "$OWNER"
createdb -h "$PG_HOST" -p "$PG_PORT" -U postgres --owner "$OWNER" "$DB"

step "release, as the owner"
export DATABASE_URL="$OWNER_URL"
$PY manage.py migrate --noinput -v0
echo "app-password" > "$WORK/app_password"
$PY manage.py pg_roles --role "$APP" --password-stdin < "$WORK/app_password"
$PY manage.py rls_apply --check
$PY manage.py pg_roles --role "$APP" --check
$PY manage.py collectstatic --noinput -v0
$PY manage.py check --deploy --fail-level WARNING
$PY manage.py tenants create acme --name "Acme Ltd"
token=$($PY manage.py tokens issue --tenant acme --role tenant_admin | grep -o 'pp_[0-9a-f]\{10\}_[A-Za-z0-9_-]*' | head -1)
test -n "$token"

step "web and workers, as the application role"
export DATABASE_URL="$APP_URL"
.venv/bin/granian --interface wsgi --host 127.0.0.1 --port "$PORT" --workers 2 --blocking-threads 2 paypilot.wsgi:application \
  >"$WORK/web.log" 2>&1 &
pids+=($!)
PAYPILOT_LOG_LEVEL=DEBUG $PY manage.py run_workers >"$WORK/qcluster.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 60); do
  curl -fsS -H "X-Forwarded-Proto: https" "http://127.0.0.1:$PORT/health" >"$WORK/health.json" 2>/dev/null && break
  sleep 0.5
done
grep -q '"database": *"ok"' "$WORK/health.json" || { cat "$WORK/web.log"; exit 1; }
# Over TLS (as the proxy reports it) every answer carries HSTS and the strict CSP.
headers=$(curl -fsS -o /dev/null -D - -H "X-Forwarded-Proto: https" "http://127.0.0.1:$PORT/health")
grep -qi "^strict-transport-security: max-age=31536000" <<<"$headers" || { echo "$headers"; exit 1; }
grep -qi "^content-security-policy: default-src 'self'" <<<"$headers" || { echo "$headers"; exit 1; }
# An authenticated call works under row-level security (token lookup, tenant binding).
curl -fsS -H "X-Forwarded-Proto: https" -H "Authorization: Bearer $token" \
  "http://127.0.0.1:$PORT/tokens" | grep -q "${token:3:10}"
for _ in $(seq 1 60); do grep -q "ready for work" "$WORK/qcluster.log" && break; sleep 0.5; done
grep -q "ready for work" "$WORK/qcluster.log" || { cat "$WORK/qcluster.log"; exit 1; }
# A task goes through Redis to the worker and its result comes back through the database.
$PY manage.py shell -c "
from django_q.tasks import async_task, result
assert result(async_task('math.sqrt', 16), wait=30000) == 4.0, 'qcluster did not run the task'"
kill -0 "${pids[1]}"  # the cluster is still alive under the application role

step "operations, as the owner"
export DATABASE_URL="$OWNER_URL"
$PY manage.py shell -c "
from ledger.services import customer_upsert
from paypilot.models import Tenant
customer_upsert(tenant=Tenant.objects.get(slug='acme'), external_id='cus_123', name='Smoke Test', email='smoke@example.org')"
$PY manage.py config_report | grep "DJANGO_SECRET_KEY .*environment  \*\*\*\*\*\*\*\*" >/dev/null
$PY manage.py retention_purge --dry-run
$PY manage.py retention_purge
$PY manage.py gdpr_export --tenant acme --customer-id cus_123 --output "$WORK/subject.json"
grep -q "smoke@example.org" "$WORK/subject.json"
$PY manage.py gdpr_erase --tenant acme --customer-id cus_123 --dry-run
$PY manage.py gdpr_erase --tenant acme --customer-id cus_123

step "backups"
pg_dump --enable-row-security --format=custom --file="$WORK/paypilot.dump" "$DATABASE_URL"
createdb -h "$PG_HOST" -p "$PG_PORT" -U "$OWNER" --owner "$OWNER" "$RESTORE_DB" 2>/dev/null \
  || createdb -h "$PG_HOST" -p "$PG_PORT" -U postgres --owner "$OWNER" "$RESTORE_DB"
pg_restore --enable-row-security --no-owner --role="$OWNER" --dbname="postgres://$OWNER@$PG_HOST:$PG_PORT/$RESTORE_DB" "$WORK/paypilot.dump"
export DATABASE_URL="postgres://$OWNER@$PG_HOST:$PG_PORT/$RESTORE_DB"
$PY manage.py migrate --noinput -v0
$PY manage.py pg_roles --role "$APP" --password-stdin < "$WORK/app_password"
$PY manage.py rls_apply --check
test "$($PY manage.py tenants list | grep -c acme)" = 1

echo "deploy smoke: every step of docs/deploy.md worked"
