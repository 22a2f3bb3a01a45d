"""The operations app's configuration (operator tools over every app)."""

from django.apps import AppConfig


class OperationsConfig(AppConfig):
    """Operator tooling over every app: GDPR export and erasure, retention purge."""

    name = "operations"
    verbose_name = "Operations"
    default_auto_field = "django.db.models.BigAutoField"
