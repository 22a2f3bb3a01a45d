# The tenant's own index goes; the composite indexes that lead with the tenant serve it.
# By DROP INDEX alone (paypilot.db.foreign_key_index_drop): AlterField would rebuild the
# table on SQLite and lose its triggers.
import django.db.models.deletion
from django.db import migrations, models

from paypilot.db import foreign_key_index_drop


class Migration(migrations.Migration):

    dependencies = [
        ('ledger', '0008_invoice_state_changelist_index'),
        ('paypilot', '0005_tenant_email_branding'),
    ]

    operations = [
        foreign_key_index_drop("ledger", migrations.AlterField(
            model_name='customer',
            name='tenant',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='customers', to='paypilot.tenant'),
        )),
        foreign_key_index_drop("ledger", migrations.AlterField(
            model_name='invoice',
            name='tenant',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='invoices', to='paypilot.tenant'),
        )),
    ]
