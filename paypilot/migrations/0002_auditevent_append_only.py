from django.db import migrations

from paypilot.db import append_only


class Migration(migrations.Migration):
    dependencies = [("paypilot", "0001_initial")]

    operations = [append_only("paypilot_auditevent")]
