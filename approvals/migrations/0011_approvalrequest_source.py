"""The draft's source copied onto its approval request, with indexes for the console's
orderings under the "template or LLM" filter (the filter joined every request to its draft).

The column is added with the default "template" for the rows that exist; one UPDATE then
copies the source of every request whose draft says otherwise. On PostgreSQL the tables
have forced row-level security: migrations run as the tables' owner, whom the policy admits,
so the UPDATE sees every tenant's rows. Reversing drops the indexes and the column.
"""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def copy_draft_source(apps, schema_editor):  # type: ignore[no-untyped-def]
    request_model = apps.get_model("approvals", "ApprovalRequest")
    draft_model = apps.get_model("dunning", "Draft")
    draft_source = Subquery(draft_model.objects.filter(pk=OuterRef("draft_id")).values("source")[:1])
    # Only the rows whose draft differs from the column's default are written (LLM drafts,
    # about 1% of requests at the bench's mix): one set-based statement on both vendors.
    request_model.objects.exclude(source=draft_source).update(source=draft_source)


class Migration(migrations.Migration):

    dependencies = [
        ("approvals", "0010_withdraw_pending_of_closed_invoices"),
        ("dunning", "0002_idempotency_response_bytes"),
    ]

    operations = [
        migrations.AddField(
            model_name="approvalrequest",
            name="source",
            field=models.CharField(choices=[("template", "Template"), ("llm", "Llm")], default="template",
                                   max_length=16),
            preserve_default=False,
        ),
        migrations.RunPython(copy_draft_source, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="approvalrequest",
            index=models.Index(fields=["tenant", "source", "status", "expires_at", "id"],
                               name="approval_tenant_source_queue"),
        ),
        migrations.AddIndex(
            model_name="approvalrequest",
            index=models.Index(fields=["source", "status", "expires_at", "id"], name="approval_source_queue"),
        ),
        migrations.AddIndex(
            model_name="approvalrequest",
            index=models.Index(fields=["tenant", "source", "expires_at", "id"], name="approval_tenant_source_expiry"),
        ),
        migrations.AddIndex(
            model_name="approvalrequest",
            index=models.Index(fields=["source", "expires_at", "id"], name="approval_source_expiry"),
        ),
    ]
