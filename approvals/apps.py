from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from anymail.signals import tracking

        from approvals.tracking import tracking_receiver

        tracking.connect(tracking_receiver, dispatch_uid="approvals.tracking")
