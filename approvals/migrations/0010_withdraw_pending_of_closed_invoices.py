"""Withdraw the pending requests whose invoice had already closed before withdrawals existed
(issue 16: paid invoices waited in the queue like the rest), each with its audit event."""

from django.db import migrations
from django.utils import timezone

REASONS = {"recovered": "invoice_paid", "churned": "invoice_cancelled", "exhausted": "invoice_exhausted",
           "voided": "invoice_voided"}


def withdraw(apps, schema_editor):  # type: ignore[no-untyped-def]
    request_model = apps.get_model("approvals", "ApprovalRequest")
    audit_model = apps.get_model("paypilot", "AuditEvent")
    now = timezone.now()
    for state, reason in REASONS.items():
        rows = list(request_model.objects.filter(status="pending", invoice__state=state)
                    .values_list("pk", "tenant_id", "draft_id", "invoice_id"))
        for start in range(0, len(rows), 1000):
            chunk = rows[start:start + 1000]
            request_model.objects.filter(pk__in=[pk for pk, *_ in chunk]).update(
                status="withdrawn", withdrawn_reason=reason, decided_at=now)
            audit_model.objects.bulk_create([
                audit_model(event="approvals.draft.withdrawn", tenant_id=tenant_id, actor="system", detail={
                    "approval": pk, "draft": draft_id, "invoice_id": invoice_id, "reason": reason,
                    "status_from": "pending"})
                for pk, tenant_id, draft_id, invoice_id in chunk
            ])


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0009_approval_withdrawn"),
        ("ledger", "0001_initial"),
        ("paypilot", "0004_tenant_holdout"),
    ]

    operations = [migrations.RunPython(withdraw, migrations.RunPython.noop)]
