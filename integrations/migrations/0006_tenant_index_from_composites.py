# The tenant's own index goes; the composite indexes that lead with the tenant serve it.
# By DROP INDEX alone (paypilot.db.foreign_key_index_drop): AlterField would rebuild the
# table on SQLite and lose its triggers.
import django.db.models.deletion
from django.db import migrations, models

from paypilot.db import foreign_key_index_drop


class Migration(migrations.Migration):

    dependencies = [
        ('integrations', '0005_webhookevent_task_row'),
        ('paypilot', '0006_tenant_index_from_composites'),
    ]

    operations = [
        foreign_key_index_drop("integrations", migrations.AlterField(
            model_name='webhookevent',
            name='tenant',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='paypilot.tenant'),
        )),
    ]
