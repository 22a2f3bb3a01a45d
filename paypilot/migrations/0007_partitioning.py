# Partitioning past one PostgreSQL (paypilot.partitioning, docs/scaling.md). A no-op unless
# PAYPILOT_PARTITIONING is on and the database is PostgreSQL; the reverse turns partitioned
# tables back into plain ones whatever the setting. It runs after the tables' own latest
# migrations, so their columns and indexes are all there to carry over.
from typing import Any

from django.db import migrations

from paypilot.partitioning import partition_all, unpartition_all


def forward(apps: Any, schema_editor: Any) -> None:
    partition_all(using=schema_editor.connection.alias)


def reverse(apps: Any, schema_editor: Any) -> None:
    unpartition_all(using=schema_editor.connection.alias)


class Migration(migrations.Migration):

    dependencies = [
        ('paypilot', '0006_tenant_index_from_composites'),
        ('integrations', '0006_tenant_index_from_composites'),
        ('reconciliation', '0007_bank_fx_and_contract_fx_margin'),
        ('django_q', '0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more'),
    ]

    operations = [migrations.RunPython(forward, reverse, elidable=False)]
