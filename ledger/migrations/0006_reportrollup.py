"""The report rollup table, its tenant key, and the triggers on ledger_invoice that keep it."""

import django.db.models.deletion
from django.db import migrations, models

from ledger.rollup import rollup_triggers


class Migration(migrations.Migration):

    dependencies = [
        ('ledger', '0005_admin_indexes'),
        ('paypilot', '0004_tenant_holdout'),
    ]

    operations = [
        migrations.CreateModel(
            name='ReportRollup',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('arm', models.CharField(max_length=16)),
                ('currency', models.CharField(max_length=3)),
                ('week', models.DateField()),
                ('state', models.CharField(max_length=16)),
                ('messaged', models.BooleanField()),
                ('delay_hours', models.IntegerField()),
                ('invoices', models.BigIntegerField()),
                ('failed_minor', models.BigIntegerField()),
                ('recovered_minor', models.BigIntegerField()),
                ('refunded_minor', models.BigIntegerField()),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+',
                                             to='paypilot.tenant')),
            ],
            options={
                'constraints': [models.UniqueConstraint(
                    fields=('tenant', 'arm', 'currency', 'week', 'state', 'messaged', 'delay_hours'),
                    name='ledger_reportrollup_key')],
            },
        ),
        rollup_triggers(),
    ]
