"""The platform admin's invoice changelist filtered by state reads a range of
(state, failed_at, id) in its own order instead of sorting every invoice of that state.

On SQLite, where the database has planner statistics (someone ran ANALYZE), the invoice
table is analysed again: a new index without statistics looks cheaper to SQLite's planner
than it is, and it would pick it for queries it cannot order."""

from django.db import migrations, models


def analyse_if_analysed(apps, schema_editor):  # type: ignore[no-untyped-def]
    connection = schema_editor.connection
    if connection.vendor != "sqlite":
        return  # PostgreSQL's autovacuum analyses new indexes' tables on its own
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'")
        if cursor.fetchone() is not None:
            cursor.execute("ANALYZE ledger_invoice")


class Migration(migrations.Migration):

    dependencies = [
        ("ledger", "0007_invoice_recovered_when_index"),
        ("paypilot", "0005_tenant_email_branding"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="invoice",
            index=models.Index(fields=["state", "failed_at", "id"], name="ledger_inv_state"),
        ),
        migrations.RunPython(analyse_if_analysed, migrations.RunPython.noop),
    ]
