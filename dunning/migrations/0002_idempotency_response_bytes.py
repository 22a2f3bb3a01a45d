"""IdempotencyRecord keeps the first answer's bytes (BinaryField) instead of a JSONField,
whose jsonb storage on PostgreSQL reordered keys. Existing rows are re-rendered compactly:
their original bytes are gone, and a replay of them now has one stable form."""

import json

from django.db import migrations, models


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    record = apps.get_model("dunning", "IdempotencyRecord")
    for row in record.objects.all().iterator():
        body = json.dumps(row.response, ensure_ascii=False, separators=(",", ":"))
        record.objects.filter(pk=row.pk).update(response_body=body.encode())


def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    record = apps.get_model("dunning", "IdempotencyRecord")
    for row in record.objects.all().iterator():
        record.objects.filter(pk=row.pk).update(response=json.loads(bytes(row.response_body) or b"{}"))


class Migration(migrations.Migration):
    dependencies = [("dunning", "0001_initial")]

    operations = [
        migrations.AddField("idempotencyrecord", "response_body", models.BinaryField(default=b"")),
        migrations.AddField("idempotencyrecord", "content_type",
                            models.CharField(default="application/json", max_length=100)),
        migrations.AlterField("idempotencyrecord", "response", models.JSONField(null=True)),
        migrations.RunPython(forwards, backwards),
        migrations.RemoveField("idempotencyrecord", "response"),
        migrations.AlterField("idempotencyrecord", "response_body", models.BinaryField()),
    ]
