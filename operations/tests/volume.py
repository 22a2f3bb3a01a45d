"""Long-standing customers in bulk: one subject with thousands of invoices and every row a
history brings (transitions, decisions, drafts, approvals, sends, webhook bodies naming them,
a reconciliation export's orders, audit events), among other customers' invoices. Written
with bulk inserts, so the GDPR tests and `bench/gdpr.py` can build real volumes quickly."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import connection
from django.utils import timezone

from approvals.models import ApprovalRequest, EmailSend
from decisions.models import DecisionRecord
from dunning.models import Draft
from integrations.models import WebhookEvent
from ledger.models import Customer, Invoice, InvoiceTransition
from operations.tests.factories import Person
from paypilot.models import AuditEvent, Tenant
from paypilot.services import pii_hash
from reconciliation.models import ImportFile, OrderRow

BATCH = 5000


@dataclass
class History:
    customer: Customer
    invoice_ids: list[str]  # the subject's external invoice ids


def _bulk(model: type, rows: list[Any]) -> list[Any]:
    return model.objects.bulk_create(rows, batch_size=BATCH)


def invoices_bulk(tenant: Tenant, customer: Customer, prefix: str, count: int, *, state: str) -> list[Invoice]:
    now = timezone.now()
    return _bulk(Invoice, [
        Invoice(
            tenant=tenant, customer=customer, provider="stripe", external_invoice_id=f"in_{prefix}_{n:06d}",
            amount_minor=1000 + n % 5000, currency="EUR", state=state, arm="treatment",
            failure_code="card_declined", subscription_id=f"sub_{prefix}", provider_customer_id=f"pcus_{prefix}",
            hosted_invoice_url=f"https://invoice.stripe.com/i/acct_1/{prefix}{n:06d}",
            failed_at=now - timedelta(days=n % 700),
        )
        for n in range(count)
    ])


def long_history(tenant: Tenant, who: Person, *, invoices: int) -> History:
    """`who` as a customer with `invoices` failed invoices and everything around each one."""
    customer = Customer.objects.create(
        tenant=tenant, external_id=who.external_id, name=who.name, email=who.email, plan=who.plan,
        currency="EUR", payment_history=[{"status": "failed", "note": who.note}],
    )
    tag = who.external_id
    rows = invoices_bulk(tenant, customer, tag, invoices, state="failed")
    now = timezone.now()
    first = who.name.split()[0]
    _bulk(InvoiceTransition, [
        InvoiceTransition(tenant=tenant, invoice=i, from_state="", to_state="failed", cause="payment_failed",
                          event_ref=f"evt_{i.external_invoice_id}")
        for i in rows
    ])
    _bulk(DecisionRecord, [
        DecisionRecord(
            tenant=tenant, invoice_ref=i.external_invoice_id, source="pipeline", failure_code="card_declined",
            attempt=1, prior_failures=0, rule_fired="card_declined", matched=True, churn_risk="low",
            action="retry", retry_in_days=3, offer="none", escalated=False, schedule_source="rules",
            likelihood=0.5, rules_version="v1", decided_at=now, card_brand="", network_advice_code="",
            network_decline_code="",
        )
        for i in rows
    ])
    drafts = _bulk(Draft, [
        Draft(tenant=tenant, invoice=i, subject=f"{first}, your invoice", locale="en", source="template",
              body=f"Hi {first}, your payment for {i.external_invoice_id} failed. {who.note}.", diagnosis="")
        for i in rows
    ])
    approvals = _bulk(ApprovalRequest, [
        ApprovalRequest(tenant=tenant, draft=d, invoice=i, source="template", subject=d.subject, body=d.body,
                        requested_at=now, expires_at=now + timedelta(days=2), note=f"spoke to {who.name}",
                        withdrawn_reason="")
        for d, i in zip(drafts, rows, strict=True)
    ])
    _bulk(EmailSend, [
        EmailSend(tenant=tenant, approval=a, draft=a.draft, invoice=a.invoice, customer=customer, status="sent",
                  recipient_hash=pii_hash(who.email), message_id=f"msg_{a.invoice.external_invoice_id}",
                  error_code="")
        for a in approvals
    ])
    _bulk(WebhookEvent, [
        WebhookEvent(
            tenant=tenant, provider="stripe", event_key=f"evt_{i.external_invoice_id}", status="processed",
            event_type="invoice.payment_failed", outcome="recorded", error="",
            resource_key=f"invoice:{i.external_invoice_id}",
            body=json.dumps({"id": f"evt_{i.external_invoice_id}", "type": "invoice.payment_failed",
                             "data": {"object": {
                "id": i.external_invoice_id, "customer": who.external_id, "customer_email": who.email,
                "customer_name": who.name, "amount_due": i.amount_minor, "currency": "eur",
                "lines": {"url": f"/v1/invoices/{i.external_invoice_id}/lines"}, "subscription": f"sub_{tag}",
                "customer_address": {"line1": f"{who.note}, 12 Lantern Row", "city": "Bruges"}}}}).encode(),
        )
        for i in rows
    ])
    export = ImportFile.objects.create(tenant=tenant, kind="orders", file_format="csv", filename=f"orders-{tag}.csv",
                                       sha256=hashlib.sha256(tag.encode()).hexdigest(), size_bytes=1, rows=invoices,
                                       actor="test")
    _bulk(OrderRow, [
        OrderRow(tenant=tenant, file=export, line=n + 2, order_id=f"ord_{tag}_{n:06d}", ordered_at=now,
                 ordered_day=0, amount_minor=i.amount_minor, currency="EUR", payment_reference=i.external_invoice_id,
                 customer_email_hash=pii_hash(who.email.lower()), status="paid")
        for n, i in enumerate(rows)
    ])
    _bulk(AuditEvent, [
        AuditEvent(tenant=tenant, event="ledger.invoice.failed", actor="system", detail={"invoice": i.pk})
        for i in rows
    ])
    return History(customer=customer, invoice_ids=[i.external_invoice_id for i in rows])


def other_customers(tenant: Tenant, *, invoices: int, per_customer: int = 50) -> None:
    """Bystanders: `invoices` recovered invoices, `per_customer` to a customer, written by one
    INSERT ... SELECT over a number series per table (a million rows in seconds, not minutes)."""
    customers = max(1, invoices // per_customer)
    now = timezone.now()
    postgres = connection.vendor == "postgresql"
    series = "generate_series(0, %s - 1) AS s(n)" if postgres else "seq"
    recursive = "" if postgres else (
        "WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < %s - 1) ")
    padded = "lpad(n::text, 7, '0')" if postgres else "printf('%%07d', n)"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO ledger_customer (tenant_id, external_id, name, email, plan, currency, locale, "
            f"payment_history, created_at, updated_at) {recursive}"
            f"SELECT %s, 'cus_other_' || {padded}, 'Other Person ' || {padded}, 'other' || {padded} || '@example.net', "
            f"'Basic', 'EUR', 'en', '[]', %s, %s FROM {series}",
            [tenant.pk, now, now, customers] if postgres else [customers, tenant.pk, now, now],
        )
        cursor.execute("SELECT min(id) FROM ledger_customer WHERE tenant_id = %s AND external_id LIKE 'cus_other_%%'",
                       [tenant.pk])
        first = cursor.fetchone()[0]
        cursor.execute(
            f"INSERT INTO ledger_invoice (tenant_id, provider, external_invoice_id, customer_id, amount_minor, "
            f"currency, state, arm, failure_code, attempt_count, subscription_id, provider_customer_id, "
            f"hosted_invoice_url, failed_at, failed_recorded_at, updated_at, recovered_minor, refunded_minor) "
            f"{recursive}SELECT %s, 'stripe', 'in_other_' || {padded}, %s + (n / {per_customer}) %% %s, "
            f"1000 + n %% 5000, 'EUR', 'recovered', 'treatment', 'card_declined', 1, "
            f"'sub_other_' || {padded}, 'pcus_other_' || {padded}, "
            f"'https://invoice.stripe.com/i/acct_1/other' || {padded}, %s, %s, %s, 0, 0 FROM {series}",
            ([tenant.pk, first, customers, now, now, now, invoices] if postgres
             else [invoices, tenant.pk, first, customers, now, now, now]),
        )
