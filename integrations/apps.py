"""The integrations app's configuration: credential cache invalidation and its hooks in the core."""

from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class IntegrationsConfig(AppConfig):
    name = "integrations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Cache invalidation only (no business logic): the webhook path caches the tenant
        # and its credential per process for a few seconds.
        from integrations.models import ProviderCredential
        from integrations.services.inbox import credential_cache_clear
        from integrations.services.resume import suspended_failures_draft
        from paypilot.models import Tenant
        from paypilot.services import register_open_failure_drafter
        from paypilot.tenancy import register_own_transaction_path

        for model in (Tenant, ProviderCredential):
            uid = f"integrations-credential-cache-{model.__name__}"
            post_save.connect(credential_cache_clear, sender=model, dispatch_uid=f"{uid}-save")
            post_delete.connect(credential_cache_clear, sender=model, dispatch_uid=f"{uid}-delete")
        # `tenants resume --draft-open` (paypilot cannot import this app).
        register_open_failure_drafter("integrations", suspended_failures_draft)
        # The inbox opens its transaction itself, after verification (services.inbox).
        register_own_transaction_path(r"^/(?:t/[^/]+/)?webhooks/")
