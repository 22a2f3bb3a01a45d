"""The core app's configuration: the OpenAPI auth extension and row-level security after migrate."""

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PaypilotConfig(AppConfig):
    name = "paypilot"
    verbose_name = "PayPilot core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from paypilot import schema  # noqa: F401  registers the OpenAPI auth extension

        # Row-level security follows the schema: every migrate (and every test database)
        # ends with every tenant table protected, including tables added since.
        from paypilot.rls import post_migrate_apply

        post_migrate.connect(post_migrate_apply, sender=self, dispatch_uid="paypilot.rls_apply")
