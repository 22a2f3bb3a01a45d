"""Data: the "Finance approvers" group with the approve permission and the views it needs."""

from django.db import migrations

GROUP = "Finance approvers"
# (app_label, codename): what a finance approver may do in the admin.
PERMISSIONS = [
    ("approvals", "approve_approvalrequest"),
    ("approvals", "view_approvalrequest"),
    ("approvals", "view_emailsend"),
    ("approvals", "view_suppressedsend"),
    ("approvals", "view_draftedit"),
    ("ledger", "view_invoice"),
    ("ledger", "view_customer"),
]


def _ensure_permissions(apps):
    # Permissions are normally created after all migrations (post_migrate); create them
    # now so the group can hold them on a fresh database.
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None


def forwards(apps, schema_editor):
    _ensure_permissions(apps)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=GROUP)
    for app_label, codename in PERMISSIONS:
        permission = Permission.objects.filter(
            content_type__app_label=app_label, codename=codename
        ).first()
        if permission is not None:
            group.permissions.add(permission)


def backwards(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0002_approvals_sends"),
        ("ledger", "0002_invoicetransition_append_only"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
