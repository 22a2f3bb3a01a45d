from django.db import migrations

from paypilot.db import append_only


class Migration(migrations.Migration):
    dependencies = [("decisions", "0001_initial"), ("paypilot", "0002_auditevent_append_only")]

    operations = [
        append_only("decisions_decisionrecord"),
        append_only("decisions_decisionoutcome"),
        append_only("decisions_decisionrefusal"),
    ]
