from django.db import migrations

from paypilot.db import append_only


class Migration(migrations.Migration):
    dependencies = [("ledger", "0001_initial"), ("paypilot", "0002_auditevent_append_only")]

    operations = [append_only("ledger_invoicetransition")]
