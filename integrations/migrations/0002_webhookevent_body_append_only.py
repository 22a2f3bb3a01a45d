from django.db import migrations

from integrations.db import append_only_column


class Migration(migrations.Migration):
    dependencies = [
        ("integrations", "0001_initial"),
        ("paypilot", "0001_initial"),
    ]

    operations = [append_only_column("integrations_webhookevent", "body")]
