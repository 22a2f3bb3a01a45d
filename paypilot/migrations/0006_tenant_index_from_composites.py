# The tenant's own index goes; the composite indexes that lead with the tenant serve it.
# By DROP INDEX alone (paypilot.db.foreign_key_index_drop): AlterField would rebuild the
# table on SQLite and lose its triggers.
import django.db.models.deletion
from django.db import migrations, models

from paypilot.db import foreign_key_index_drop


class Migration(migrations.Migration):

    dependencies = [
        ('paypilot', '0005_tenant_email_branding'),
    ]

    operations = [
        foreign_key_index_drop("paypilot", migrations.AlterField(
            model_name='auditevent',
            name='tenant',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, to='paypilot.tenant'),
        )),
    ]
