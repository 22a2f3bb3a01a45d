"""Data: the django-q2 Schedule running approvals.tasks.approvals_tick every minute."""

from django.db import migrations

NAME = "approvals.tick"


def forwards(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.update_or_create(
        name=NAME,
        defaults={
            "func": "approvals.tasks.approvals_tick",
            "schedule_type": "I",  # Schedule.MINUTES
            "minutes": 1,
            "repeats": -1,  # forever
        },
    )


def backwards(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0003_finance_approvers_group"),
        ("django_q", "0018_task_success_index"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
