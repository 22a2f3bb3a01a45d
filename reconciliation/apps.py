from typing import Any

from django.apps import AppConfig


def _demo_sample(sender: Any, stdout: Any, **kwargs: Any) -> None:
    """demo_setup: load the fictional sample workspace into its own `sample` tenant."""
    from reconciliation.services.sample import SAMPLE_TENANT, sample_load

    tenant, run = sample_load(actor="demo_setup")
    stdout.write(f"reconciliation sample loaded into tenant {tenant.slug} (review as of {run.as_of}, "
                 f"{run.breaks_count} breaks); try: manage.py recon_run --tenant {SAMPLE_TENANT} --as-of {run.as_of}")


class ReconciliationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "reconciliation"
    verbose_name = "Reconciliation"

    def ready(self) -> None:
        from paypilot.disputes import register_dispute_sink
        from paypilot.signals import demo_setup_done
        from reconciliation.services.dispute_feed import dispute_record_live

        demo_setup_done.connect(_demo_sample, dispatch_uid="reconciliation.sample")
        # Stripe's charge.dispute.* webhooks (integrations) land in the dispute table here.
        register_dispute_sink(dispute_record_live)
