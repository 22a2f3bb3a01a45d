"""The reconciliation app's configuration: the demo sample, the dispute sink and the MCP server."""

from typing import Any

from django.apps import AppConfig


def _demo_sample(sender: Any, stdout: Any, **kwargs: Any) -> None:
    """demo_setup: load the fictional sample workspace into its own `sample` tenant, and the
    sample's export files into the demo tenant, so its home page and review have a run."""
    from django.conf import settings

    from paypilot.models import Tenant
    from reconciliation.services.sample import SAMPLE_TENANT, exports_load, sample_load

    tenant, run = sample_load(actor="demo_setup")
    stdout.write(f"reconciliation sample loaded into tenant {tenant.slug} (review as of {run.as_of}, "
                 f"{run.breaks_count} breaks); try: manage.py recon_run --tenant {SAMPLE_TENANT} --as-of {run.as_of}")
    demo = Tenant.objects.filter(slug=settings.PAYPILOT_DEMO_TENANT).first()
    if demo is not None:
        run = exports_load(tenant=demo, actor="demo_setup")
        stdout.write(f"reconciliation of the sample exports for tenant {demo.slug}: review as of {run.as_of}, "
                     f"{run.breaks_count} breaks")


def _stdio_tenant_server(*, tenant: Any, role: str) -> Any:
    """`manage.py mcp_server --tenant T --role R`: every tool, acting as R for T over stdio."""
    from reconciliation.mcp_tools.scope import TRANSPORT_STDIO, Caller, current_caller
    from reconciliation.mcp_tools.server import build_tenant_server

    current_caller.set(Caller(tenant=tenant, role=role, transport=TRANSPORT_STDIO))
    return build_tenant_server()


class ReconciliationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "reconciliation"
    verbose_name = "Reconciliation"

    def ready(self) -> None:
        from paypilot.disputes import register_dispute_sink
        from paypilot.mcp_registry import tenant_server_register
        from paypilot.signals import demo_setup_done
        from reconciliation.services.dispute_feed import dispute_record_live

        demo_setup_done.connect(_demo_sample, dispatch_uid="reconciliation.sample")
        # Stripe's charge.dispute.* webhooks (integrations) land in the dispute table here.
        register_dispute_sink(dispute_record_live)
        # The stdio MCP command lives in decisions; it serves these tools through this factory.
        tenant_server_register(_stdio_tenant_server)
