"""The ledger app's configuration: it registers the invoice currency the shadow replay reads."""

from django.apps import AppConfig


def _invoice_currency():  # type: ignore[no-untyped-def]
    """The currency of the ledger invoice a decision row names by `invoice_ref`."""
    from django.db.models import OuterRef, Subquery

    from ledger.models import Invoice

    return Subquery(
        Invoice.objects.filter(tenant_id=OuterRef("tenant_id"), external_invoice_id=OuterRef("invoice_ref"))
        .order_by("pk").values("currency")[:1]
    )


class LedgerConfig(AppConfig):
    name = "ledger"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The shadow replay's currency for decision rows stored before they carried one.
        from paypilot.shadow_sources import register_currency_source

        register_currency_source(_invoice_currency)
