# The invoice's (invoice, status) index before its single-column foreign-key index goes, so
# no moment is without one; the lone tenant index goes too (every index leads with it).

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from paypilot.db import foreign_key_index_drop


class Migration(migrations.Migration):

    dependencies = [
        ('approvals', '0011_approvalrequest_source'),
        ('dunning', '0002_idempotency_response_bytes'),
        ('ledger', '0008_invoice_state_changelist_index'),
        ('paypilot', '0005_tenant_email_branding'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name='approvalrequest',
            index=models.Index(fields=['invoice', 'status'], name='approval_invoice_status'),
        ),
        foreign_key_index_drop("approvals", migrations.AlterField(
            model_name='approvalrequest',
            name='invoice',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='approvals', to='ledger.invoice'),
        )),
        foreign_key_index_drop("approvals", migrations.AlterField(
            model_name='approvalrequest',
            name='tenant',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='paypilot.tenant'),
        )),
    ]
