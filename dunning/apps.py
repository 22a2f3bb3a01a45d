"""The dunning app's configuration: registers the shadow replay's draft look-ups and the chat seam."""

from django.apps import AppConfig


def _draft_stored():  # type: ignore[no-untyped-def]
    """A draft was stored for this decision row."""
    from django.db.models import Exists, OuterRef

    from dunning.models import Draft

    return Exists(Draft.objects.filter(decision_id=OuterRef("pk")))


def _draft_invoice_currency():  # type: ignore[no-untyped-def]
    """The currency of the invoice of the draft written for this decision row (covers rows
    whose invoice_ref is the long-id form `ledger:<pk>`)."""
    from django.db.models import OuterRef, Subquery

    from dunning.models import Draft

    # No ORDER BY: with one, PostgreSQL may walk the drafts' primary key for each decision row
    # (LIMIT 1 over an ordered scan) instead of the decision_id index; a decision has one draft.
    return Subquery(Draft.objects.filter(decision_id=OuterRef("pk")).order_by().values("invoice__currency")[:1])


class DunningConfig(AppConfig):
    name = "dunning"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The shadow replay joins decisions to the drafts actually stored (decisions imports
        # no dunning model).
        from dunning import llm
        from paypilot.chat import ChatSeam, chat_seam_register
        from paypilot.shadow_sources import register_currency_source, register_draft_source

        register_draft_source(_draft_stored)
        register_currency_source(_draft_invoice_currency)
        # The one chat seam, offered to the apps beside dunning through the core. Looked up
        # at call time, so a test replacing llm.build_chat_client is seen everywhere.
        chat_seam_register(ChatSeam(
            get_client=lambda: llm.get_chat_client(),
            estimate_cost=lambda *a, **k: llm.estimate_cost(*a, **k),
            budget_allows=lambda **k: llm.budget_allows(**k),
            usage_record=lambda **k: llm.usage_record(**k),
        ))
