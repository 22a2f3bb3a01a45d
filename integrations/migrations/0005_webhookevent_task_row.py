from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('integrations', '0004_webhookevent_received_index'),
    ]

    operations = [
        migrations.AddField(
            model_name='webhookevent',
            name='task_row',
            field=models.BigIntegerField(blank=True, editable=False, null=True),
        ),
    ]
