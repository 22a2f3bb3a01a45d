# Identifier columns of the imported rows compared byte by byte (paypilot.fields): COLLATE "C"
# on PostgreSQL, no change on SQLite (byte_order_collation: no table rebuilds there).

from django.db import migrations

import paypilot.fields
from paypilot.db import byte_order_collation


class Migration(migrations.Migration):

    dependencies = [
        ('reconciliation', '0004_bulk_rows_without_per_row_keys'),
    ]

    operations = [
        byte_order_collation("reconciliation", [
            migrations.AlterField(
                model_name='bankrow',
                name='bank_reference',
                field=paypilot.fields.IdentifierCharField(blank=True, max_length=128),
            ),
            migrations.AlterField(
                model_name='bankrow',
                name='reference',
                field=paypilot.fields.IdentifierCharField(blank=True, max_length=255),
            ),
            migrations.AlterField(
                model_name='bankrow',
                name='remittance',
                field=paypilot.fields.IdentifierTextField(blank=True),
            ),
            migrations.AlterField(
                model_name='disputerow',
                name='charge_id',
                field=paypilot.fields.IdentifierCharField(blank=True, max_length=128),
            ),
            migrations.AlterField(
                model_name='disputerow',
                name='dispute_id',
                field=paypilot.fields.IdentifierCharField(max_length=128),
            ),
            migrations.AlterField(
                model_name='orderrow',
                name='order_id',
                field=paypilot.fields.IdentifierCharField(max_length=128),
            ),
            migrations.AlterField(
                model_name='orderrow',
                name='payment_reference',
                field=paypilot.fields.IdentifierCharField(blank=True, max_length=128),
            ),
            migrations.AlterField(
                model_name='providerrow',
                name='charge_id',
                field=paypilot.fields.IdentifierCharField(blank=True, max_length=128),
            ),
            migrations.AlterField(
                model_name='providerrow',
                name='order_reference',
                field=paypilot.fields.IdentifierCharField(blank=True, max_length=128),
            ),
            migrations.AlterField(
                model_name='providerrow',
                name='payout_id',
                field=paypilot.fields.IdentifierCharField(blank=True, max_length=128),
            ),
            migrations.AlterField(
                model_name='providerrow',
                name='transaction_id',
                field=paypilot.fields.IdentifierCharField(max_length=128),
            ),
        ]),
    ]
