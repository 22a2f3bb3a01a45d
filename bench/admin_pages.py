"""Time every admin changelist and the approval console at 1,000,000 invoices and 900,000
approval requests, on SQLite or PostgreSQL; prints one line per page.

The tenant is built with set-based SQL (`INSERT ... SELECT` over a number series: SQLite's
recursive CTE, PostgreSQL's generate_series), not ORM loops: about a minute for the full
size. Pages are requested in process through Django's test client (the whole middleware
stack, the admin and the templates; no HTTP server), logged in as the tenant's finance user
(staff, a tenant membership, view and approve permissions) and, with --platform, as a
superuser. Each page: one warm-up, then the median and the worst of --repeat requests, and
the number of SQL queries of the last one.

Usage:
  python bench/admin_pages.py --db sqlite   [--invoices 1000000] [--approvals 900000] [--rebuild]
  python bench/admin_pages.py --db postgres [--pg-url postgres://postgres@127.0.0.1:5432/pp_perf_admin]
The database is kept between runs (rebuilt only with --rebuild or when its size differs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SQLITE_PATH = Path(os.environ.get("BENCH_SQLITE", "/tmp/pp-bench-admin.sqlite3"))
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/pp_perf_admin"
CUSTOMERS_PER_INVOICE = 5  # 200,000 customers for 1,000,000 invoices
BASE_TIME = "2026-01-01 00:00:00"
STEP_SECONDS = 20  # one failure every 20 s: 1,000,000 invoices span about 231 days
# What the "failed at: this year" filter link sends.
THIS_YEAR = "failed_at__gte=2026-01-01+00%3A00%3A00%2B00%3A00&failed_at__lt=2027-01-01+00%3A00%3A00%2B00%3A00"
FAILURE_CODES = ("card_expired", "insufficient_funds", "generic_decline", "issuer_do_not_retry",
                 "card_details_invalid", "direct_debit_not_retried", "retries_exhausted", "default")


def _configure(db: str, pg_url: str) -> None:
    if db == "sqlite":
        os.environ["DATABASE_URL"] = f"sqlite:///{SQLITE_PATH}"
    else:
        os.environ["DATABASE_URL"] = pg_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    os.environ.setdefault("DJANGO_DEBUG", "0")
    os.environ.setdefault("PAYPILOT_LOG_LEVEL", "WARNING")
    os.environ.setdefault("PAYPILOT_RATE_LIMIT_PER_TOKEN", "0")
    os.environ.setdefault("PAYPILOT_RATE_LIMIT_PER_IP", "0")
    import django

    django.setup()


def _recreate_pg(pg_url: str) -> None:
    import psycopg

    admin_url, name = pg_url.rsplit("/", 1)
    with psycopg.connect(f"{admin_url}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _case(expr: str, values: tuple[str, ...]) -> str:
    whens = " ".join(f"WHEN {i} THEN '{v}'" for i, v in enumerate(values))
    return f"CASE ({expr}) % {len(values)} {whens} END"


def _build(*, invoices: int, approvals: int) -> None:
    """One tenant with `invoices` invoices, a customer per five, and `approvals` decisions,
    drafts and approval requests (one each for the first `approvals` invoices)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from decisions.rules import RULES_VERSION
    from paypilot.models import Tenant
    from paypilot.services import tenant_create

    vendor = connection.vendor
    tenant = Tenant.objects.filter(slug="bench").first() or tenant_create(slug="bench", name="Bench")
    t = tenant.pk
    customers = max(1, invoices // CUSTOMERS_PER_INVOICE)

    def series(n: int) -> tuple[str, str]:
        if vendor == "postgresql":
            return "", f"FROM generate_series(1, {n}) AS s(n)"
        return f"WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {n}) ", "FROM s"

    def ts(seconds: str) -> str:
        if vendor == "postgresql":
            return f"(timestamptz '{BASE_TIME}+00' + ({seconds}) * interval '1 second')"
        return f"datetime('{BASE_TIME}', '+' || ({seconds}) || ' seconds')"

    # The pending requests expire within the next three days of the real clock, so the home
    # page's queue figures (pending, expiring within a day) count live rows, not an empty range.
    now_sql = timezone.now().strftime("%Y-%m-%d %H:%M:%S")

    def live(seconds: str) -> str:
        if vendor == "postgresql":
            return f"(timestamptz '{now_sql}+00' + ({seconds}) * interval '1 second')"
        return f"datetime('{now_sql}', '+' || ({seconds}) || ' seconds')"

    json_empty = "'[]'::jsonb" if vendor == "postgresql" else "'[]'"
    json_obj = "'{}'::jsonb" if vendor == "postgresql" else "'{}'"
    true = "TRUE" if vendor == "postgresql" else "1"
    false = "FALSE" if vendor == "postgresql" else "0"
    pending_from = max(1, approvals - approvals // 20)  # the newest 5% are still pending
    # Draft n's source (1% LLM); request n copies it, as approvals_open does.
    draft_source = "CASE WHEN n % 100 = 0 THEN 'llm' ELSE 'template' END"
    statements = {
        "customers": (customers, f"""
            INSERT INTO ledger_customer (id, tenant_id, external_id, name, email, plan, mrr_minor,
                currency, locale, payment_history, created_at, updated_at)
            SELECT n, {t}, 'cus_' || n, 'Customer ' || n, 'c' || n || '@example.com',
                {_case('n', ('starter', 'pro', 'business'))}, 4900, {_case('n', ('USD', 'EUR', 'GBP', 'JPY'))},
                {_case('n', ('en', 'de', 'fr', 'es'))}, {json_empty}, {ts('n')}, {ts('n')}"""),
        "invoices": (invoices, f"""
            INSERT INTO ledger_invoice (id, tenant_id, provider, external_invoice_id, customer_id,
                amount_minor, currency, state, arm, failure_code, attempt_count, subscription_id,
                provider_customer_id, hosted_invoice_url, failed_at, failed_recorded_at, updated_at, recovered_minor,
                refunded_minor, recovered_at)
            SELECT n, {t}, {_case('n', ('stripe', 'stripe', 'stripe', 'recharge', 'chargebee'))},
                'in_' || n, 1 + (n % {customers}), 1000 + (n % 90000),
                {_case('n', ('USD',) * 7 + ('EUR', 'GBP', 'JPY'))},
                {_case('n', ('failed', 'failed', 'messaged', 'clicked', 'recovered', 'churned', 'exhausted'))},
                CASE WHEN n % 10 = 0 THEN 'holdout' ELSE 'treatment' END,
                {_case('n', FAILURE_CODES[:7])}, 1 + n % 4, 'sub_' || n, 'cus_' || (1 + n % {customers}), '',
                {ts(f'n * {STEP_SECONDS}')}, {ts(f'n * {STEP_SECONDS}')}, {ts(f'n * {STEP_SECONDS}')}, 0, 0,
                CASE WHEN n % 7 = 4 THEN {ts(f'n * {STEP_SECONDS} + (n % 72) * 3600')} END"""),
        "decisions": (approvals, f"""
            INSERT INTO decisions_decisionrecord (id, tenant_id, invoice_ref, source, failure_code,
                attempt, prior_failures, rule_fired, matched, churn_risk, action, retry_in_days, offer,
                escalated, schedule_source, likelihood, rules_version, decided_at, card_brand, network_advice_code,
                network_decline_code, network_rules)
            SELECT n, {t}, 'in_' || n, 'pipeline', {_case('n', FAILURE_CODES[:7])}, 1 + n % 4, n % 3,
                {_case('n', FAILURE_CODES)}, (n % 8 <> 7), {_case('n', ('low', 'medium', 'high'))},
                'request_card_update', 3, 'Update the card on file.', (n % 9 = 0), 'rules', 0.4,
                '{RULES_VERSION}', {ts(f'n * {STEP_SECONDS}')}, '', '', '', {json_empty}"""),
        "drafts": (approvals, f"""
            INSERT INTO dunning_draft (id, tenant_id, invoice_id, decision_id, subject, body, diagnosis,
                locale, source, fallback_used, guard_verdict, created_at)
            SELECT n, {t}, n, n, 'Your payment did not go through', 'Hello, the card on file ...', 'card',
                {_case('n', ('en', 'en', 'de', 'fr', 'es'))}, {draft_source}, (n % 500 = 0), {json_obj},
                {ts(f'n * {STEP_SECONDS}')}"""),
        "approval requests": (approvals, f"""
            INSERT INTO approvals_approvalrequest (id, tenant_id, draft_id, invoice_id, source, status, subject,
                body, edited, requested_at, expires_at, high_value, note, withdrawn_reason)
            SELECT n, {t}, n, n, {draft_source},
                CASE WHEN n >= {pending_from} THEN 'pending'
                     ELSE {_case('n', ('approved', 'approved', 'approved', 'rejected', 'expired'))} END,
                'Your payment did not go through', 'Hello, the card on file ...', {false},
                {ts(f'n * {STEP_SECONDS}')},
                CASE WHEN n >= {pending_from} THEN {live('(n % 72) * 3600 + 60')}
                     ELSE {ts(f'n * {STEP_SECONDS} + 259200')} END,
                CASE WHEN n % 40 = 0 THEN {true} ELSE {false} END, '', ''"""),
    }
    for label, (count, insert) in statements.items():
        table = insert.split("INSERT INTO", 1)[1].split()[0]
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {table}")
            if cursor.fetchone()[0] == count:  # built by an earlier run that stopped later on
                continue
        start = time.perf_counter()
        head, source = series(count)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"{head}{insert} {source}")
        print(f"  built {count:>9,} {label} in {time.perf_counter() - start:5.1f} s", flush=True)
    start = time.perf_counter()
    with connection.cursor() as cursor:
        if vendor == "postgresql":
            for table in ("ledger_customer", "ledger_invoice", "decisions_decisionrecord", "dunning_draft",
                          "approvals_approvalrequest"):
                cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    # Statistics (and, on PostgreSQL, the visibility map an index-only scan needs), as a
    # running server's autovacuum / `PRAGMA optimize` would have them.
    if vendor == "postgresql":
        connection.ensure_connection()
        raw = connection.connection
        previous = raw.autocommit
        raw.autocommit = True
        raw.execute("VACUUM ANALYZE")
        raw.autocommit = previous
    else:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(f"  analysed in {time.perf_counter() - start:5.1f} s", flush=True)


def _build_extras(*, approvals: int) -> None:
    """The home page's other sources, added when missing (older bench databases lack them):
    one suppressed send per ten approval requests, spread over the last 30 days (so about a
    quarter fall in "this week"), and a reconciliation run."""
    import json

    from django.db import connection, transaction
    from django.utils import timezone

    from approvals.models import SuppressedSend
    from paypilot.models import Tenant
    from reconciliation.models import Run

    tenant = Tenant.objects.get(slug="bench")
    if not SuppressedSend.objects.filter(tenant=tenant).exists():
        count = max(1, approvals // 10)
        start = time.perf_counter()
        now = timezone.now().strftime("%Y-%m-%d %H:%M:%S")
        vendor = connection.vendor
        reasons = ("sending_disabled", "sending_disabled", "recipient_not_allowlisted", "cooldown_active",
                   "invoice_closed")
        gates = ("sending_enabled", "sending_enabled", "recipient_allowlisted", "cooldown", "invoice_open")
        if vendor == "postgresql":
            head, source = "", f"FROM generate_series(1, {count}) AS s(n)"
            created = f"(timestamptz '{now}+00' - (n * {2592000 // count} + 1) * interval '1 second')"
            dry = "(n % 5 < 2)"
        else:
            head = f"WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {count}) "
            source = "FROM s"
            created = f"datetime('{now}', '-' || (n * {2592000 // count} + 1) || ' seconds')"
            dry = "(n % 5 < 2)"
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"""{head}INSERT INTO approvals_suppressedsend (tenant_id, approval_id, invoice_id, gate,
                reason, dry_run, created_at)
                SELECT {tenant.pk}, n * 10, n * 10, {_case('n', gates)}, {_case('n', reasons)}, {dry},
                    {created} {source}""")
        print(f"  built {count:>9,} suppressed sends in {time.perf_counter() - start:5.1f} s", flush=True)
    if not Run.objects.filter(tenant=tenant).exists():
        result = {"money_in_breaks_minor": {"EUR": 120000, "USD": 493100}, "disputes_due": [
            {"dispute_id": f"dp_{n}", "charge_id": f"ch_{n}", "due_by": "2026-12-09", "days_left": 1 + n % 7,
             "amount_minor": 4900 + n, "currency": "USD"} for n in range(40)]}
        Run.objects.create(tenant=tenant, as_of=timezone.now().date(), input_digest="b" * 64,
                           result_json=json.dumps(result), result_sha256="b" * 64, match_rate=0.94, breaks_count=0,
                           actor="bench")


def _users():  # type: ignore[no-untyped-def]
    from django.contrib.auth.models import Permission, User

    from approvals.models import AdminMembership
    from paypilot.models import Tenant

    tenant = Tenant.objects.get(slug="bench")
    finance, created = User.objects.get_or_create(username="bench-finance", defaults={"is_staff": True})
    if created:
        finance.user_permissions.set(Permission.objects.filter(codename__startswith="view_")
                                     | Permission.objects.filter(codename="approve_approvalrequest"))
        AdminMembership.objects.create(user=finance, tenant=tenant)
    platform, _ = User.objects.get_or_create(username="bench-platform",
                                             defaults={"is_staff": True, "is_superuser": True})
    return finance, platform


def _pages(*, invoices: int) -> list[tuple[str, str]]:
    deep = "p=1000"
    mid_invoice = f"in_{invoices // 2 + 4242}"
    return [
        ("home page (admin index)", "/admin/"),
        ("console: expiring within a day", "/admin/approvals/approvalrequest/?queue=pending&expires=day"),
        ("console: second approver waiting", "/admin/approvals/approvalrequest/?queue=pending&second=waiting"),
        ("console: queue (pending), first page", "/admin/approvals/approvalrequest/"),
        ("console: ?queue=all, first page", "/admin/approvals/approvalrequest/?queue=all"),
        ("console: ?queue=all, page 1000", f"/admin/approvals/approvalrequest/?queue=all&{deep}"),
        ("console: approved, page 1000", f"/admin/approvals/approvalrequest/?queue=approved&{deep}"),
        ("console: search invoice id", f"/admin/approvals/approvalrequest/?queue=all&q={mid_invoice}"),
        ("console: search customer id", "/admin/approvals/approvalrequest/?queue=all&q=cus_4242"),
        ("console: search customer email", "/admin/approvals/approvalrequest/?queue=all&q=c4242%40example.com"),
        ("console: filter source=llm", "/admin/approvals/approvalrequest/?queue=all&source=llm"),
        ("console: filter risk=high", "/admin/approvals/approvalrequest/?risk=high"),
        ("console: filter rule=card_expired", "/admin/approvals/approvalrequest/?rule=card_expired"),
        ("console: filter locale=de", "/admin/approvals/approvalrequest/?locale=de"),
        ("console: filter high value", "/admin/approvals/approvalrequest/?high_value__exact=1"),
        ("console: review page", "/admin/approvals/approvalrequest/{pending_id}/change/"),
        ("invoices: first page", "/admin/ledger/invoice/"),
        ("invoices: page 1000", f"/admin/ledger/invoice/?{deep}"),
        ("invoices: search invoice id", f"/admin/ledger/invoice/?q={mid_invoice}"),
        ("invoices: filter state=recovered", "/admin/ledger/invoice/?state__exact=recovered"),
        ("invoices: filter arm=holdout", "/admin/ledger/invoice/?arm__exact=holdout"),
        ("invoices: filter currency=JPY", "/admin/ledger/invoice/?currency=JPY"),
        ("invoices: filter provider=chargebee", "/admin/ledger/invoice/?provider=chargebee"),
        ("invoices: filter failed this year", "/admin/ledger/invoice/?" + THIS_YEAR),
        ("invoices: invoice page", "/admin/ledger/invoice/{invoice_id}/change/"),
        ("customers: first page", "/admin/ledger/customer/"),
        ("customers: page 1000", f"/admin/ledger/customer/?{deep}"),
        ("customers: search name", "/admin/ledger/customer/?q=Customer+4242"),
        ("customers: filter plan=pro", "/admin/ledger/customer/?plan=pro"),
        ("drafts: first page", "/admin/dunning/draft/"),
        ("drafts: page 1000", f"/admin/dunning/draft/?{deep}"),
        ("drafts: search invoice id", f"/admin/dunning/draft/?q={mid_invoice}"),
        ("drafts: filter locale=de", "/admin/dunning/draft/?locale=de"),
        ("drafts: filter source=llm", "/admin/dunning/draft/?source__exact=llm"),
        ("decisions: first page", "/admin/decisions/decisionrecord/"),
        ("decisions: page 1000", f"/admin/decisions/decisionrecord/?{deep}"),
        ("decisions: search invoice ref", f"/admin/decisions/decisionrecord/?q={mid_invoice}"),
        ("decisions: filter rule=card_expired", "/admin/decisions/decisionrecord/?rule_fired=card_expired"),
        ("decisions: filter risk=high", "/admin/decisions/decisionrecord/?churn_risk=high"),
        ("decisions: filter matched=no", "/admin/decisions/decisionrecord/?matched__exact=0"),
        ("outcomes: first page", "/admin/decisions/decisionoutcome/"),
        ("refusals (decide): first page", "/admin/decisions/decisionrefusal/"),
        ("webhook events: first page", "/admin/integrations/webhookevent/"),
        ("credentials: first page", "/admin/integrations/providercredential/"),
        ("link settings: first page", "/admin/integrations/linksettings/"),
        ("suppressed sends: first page", "/admin/approvals/suppressedsend/"),
        ("sends: first page", "/admin/approvals/emailsend/"),
        ("draft edits: first page", "/admin/approvals/draftedit/"),
        ("paid before failure: first page", "/admin/ledger/paidbeforefailure/"),
        ("LLM usage: first page", "/admin/dunning/llmusage/"),
        ("audit events: first page", "/admin/paypilot/auditevent/"),
        ("tenants: first page", "/admin/paypilot/tenant/"),
        ("API tokens: first page", "/admin/paypilot/apitoken/"),
    ]


def _time_pages(*, users: list[tuple[str, object]], repeat: int, invoices: int, only: str) -> list[float]:
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from approvals.models import ApprovalRequest

    settings.ALLOWED_HOSTS = ["*"]
    pending = (ApprovalRequest.objects.filter(status="pending").order_by("expires_at", "id")
               .values_list("pk", flat=True)[:1])
    ids = {"pending_id": pending[0] if pending else 1, "invoice_id": invoices // 2}
    medians: list[float] = []
    for who, user in users:
        client = Client()
        client.force_login(user)
        print(f"\n{'page (' + who + ')':<48} {'median ms':>10} {'max ms':>8} {'queries':>8} status")
        for label, url in _pages(invoices=invoices):
            if only and only not in label:
                continue
            url = url.format(**ids)
            client.get(url)  # warm-up: templates compiled, plans cached
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                response = client.get(url)
                times.append((time.perf_counter() - start) * 1000)
            with CaptureQueriesContext(connection) as queries:
                response = client.get(url)
            status = response.status_code
            median = statistics.median(times)
            medians.append(median)
            flag = "" if median < 300 else "  <-- over 300 ms"
            print(f"{label:<48} {median:>10.1f} {max(times):>8.1f} {len(queries):>8} {status}{flag}", flush=True)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL", DEFAULT_PG))
    parser.add_argument("--invoices", type=int, default=1_000_000)
    parser.add_argument("--approvals", type=int, default=900_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rebuild", action="store_true", help="drop and rebuild the database")
    parser.add_argument("--platform", action="store_true", help="also time the pages as a superuser")
    parser.add_argument("--only", default="", help="time only the pages whose label contains this")
    args = parser.parse_args()
    if args.approvals > args.invoices:
        parser.error("--approvals must not exceed --invoices (one request per invoice)")

    if args.rebuild:
        if args.db == "sqlite":
            for suffix in ("", "-wal", "-shm"):
                Path(f"{SQLITE_PATH}{suffix}").unlink(missing_ok=True)
        else:
            _recreate_pg(args.pg_url)
    _configure(args.db, args.pg_url)
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0, interactive=False)
    from approvals.models import ApprovalRequest
    from ledger.models import Invoice

    have = Invoice.objects.count()
    if have != args.invoices or ApprovalRequest.objects.count() != args.approvals:
        if have not in (0, args.invoices):
            sys.exit(f"the {args.db} database holds {have:,} invoices, not {args.invoices:,}: use --rebuild")
        print(f"building the bench tenant on {connection.vendor}:", flush=True)
        start = time.perf_counter()
        _build(invoices=args.invoices, approvals=args.approvals)
        print(f"  total {time.perf_counter() - start:5.1f} s", flush=True)
    _build_extras(approvals=args.approvals)
    finance, platform = _users()
    users: list[tuple[str, object]] = [("finance user", finance)]
    if args.platform:
        users.append(("platform admin", platform))
    print(f"\n{connection.vendor}: {args.invoices:,} invoices, {args.approvals:,} approval requests; "
          f"median of {args.repeat} after a warm-up, in process (Django test client)")
    medians = _time_pages(users=users, repeat=args.repeat, invoices=args.invoices, only=args.only)
    over = sum(1 for m in medians if m >= 300)
    print(f"\n{len(medians)} pages timed; {over} over 300 ms (worst median {max(medians):.1f} ms)")


if __name__ == "__main__":
    main()
