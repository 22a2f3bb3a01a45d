"""Sends: the claim time, the hand-off marker and the one retry of a dead claim; `unknown`."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('approvals', '0005_append_only'),
    ]

    operations = [
        migrations.AddField(
            model_name='emailsend',
            name='claimed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='emailsend',
            name='handed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='emailsend',
            name='reclaimed',
            field=models.BooleanField(default=False),
        ),
        migrations.AlterField(
            model_name='emailsend',
            name='status',
            field=models.CharField(choices=[('sending', 'Sending'), ('retrying', 'Retrying'), ('sent', 'Sent'), ('delivered', 'Delivered'), ('bounced', 'Bounced'), ('failed', 'Failed'), ('unknown', 'delivery unknown')], default='sending', max_length=16),
        ),
    ]
