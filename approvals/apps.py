"""The approvals app's configuration: delivery tracking, and withdrawing requests of closed invoices."""

from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from anymail.signals import tracking

        from approvals.tracking import tracking_receiver

        tracking.connect(tracking_receiver, dispatch_uid="approvals.tracking")

        from approvals.services import approvals_withdraw_on_close
        from ledger.services import invoice_close_hook_register

        # A closed invoice withdraws its pending request in the ledger move's transaction.
        invoice_close_hook_register(name="approvals.withdraw", hook=approvals_withdraw_on_close)
