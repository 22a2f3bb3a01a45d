"""The periodic sweeper: a django-q2 Schedule re-enqueuing webhook events left behind."""

from django.db import migrations

SCHEDULE_NAME = "integrations.sweep_webhook_events"


def create_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        name=SCHEDULE_NAME,
        defaults={
            "func": "integrations.tasks.sweep_webhook_events",
            "schedule_type": "I",  # Schedule.MINUTES
            "minutes": 1,
            "repeats": -1,
        },
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=SCHEDULE_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("integrations", "0002_webhookevent_body_append_only"),
        ("django_q", "0018_task_success_index"),
    ]

    operations = [migrations.RunPython(create_schedule, remove_schedule)]
