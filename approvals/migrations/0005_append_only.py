"""Suppressed sends and draft edits refuse UPDATE and DELETE in the database itself."""

from django.db import migrations

from paypilot.db import append_only


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0004_tick_schedule"),
        ("paypilot", "0002_auditevent_append_only"),
    ]

    operations = [
        append_only("approvals_suppressedsend"),
        append_only("approvals_draftedit"),
    ]
