from django.apps import AppConfig


class PaypilotConfig(AppConfig):
    name = "paypilot"
    verbose_name = "PayPilot core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from paypilot import schema  # noqa: F401  registers the OpenAPI auth extension
