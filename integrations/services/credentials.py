"""Per-tenant provider credentials: set (encrypted, audited) and read (decrypted)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.db import transaction

from integrations.crypto import secret_decrypt, secret_encrypt
from integrations.models import LinkSettings, Provider, ProviderCredential
from integrations.providers import Credentials
from paypilot.models import Tenant
from paypilot.services import audit_record

URL_KEY_BYTES = 24  # 32 url-safe characters: the Chargebee URL segment


@dataclass(frozen=True)
class CredentialChange:
    credential: ProviderCredential
    url_key: str  # the Chargebee segment when one was generated now (shown once), else ""


def credential_set(
    *,
    tenant: Tenant,
    provider: str,
    secret: str | None = None,
    api_key: str | None = None,
    username: str | None = None,
    rotate_url_key: bool = False,
    default_currency: str | None = None,
    actor: str = "system",
) -> CredentialChange:
    """Create or update a tenant's credentials for `provider`.

    `None` leaves a value alone; "" clears it. Secrets are stored Fernet-encrypted. A
    Chargebee credential gets an unguessable URL segment on creation (or on
    `rotate_url_key`), returned once in the result. Audited with ids only, never a value.
    """
    provider = Provider(provider).value
    with transaction.atomic():
        credential, created = ProviderCredential.objects.select_for_update().get_or_create(
            tenant=tenant, provider=provider
        )
        changed: list[str] = []
        if secret is not None:
            credential.secret_encrypted = secret_encrypt(secret.strip())
            changed.append("secret")
        if api_key is not None:
            credential.api_key_encrypted = secret_encrypt(api_key.strip())
            changed.append("api_key")
        if username is not None:
            credential.username = username.strip()
            changed.append("username")
        if default_currency:
            credential.default_currency = default_currency.strip().upper()[:3]
            changed.append("default_currency")
        url_key = ""
        if provider == Provider.CHARGEBEE and (rotate_url_key or not credential.url_key_encrypted):
            url_key = secrets.token_urlsafe(URL_KEY_BYTES)
            credential.url_key_encrypted = secret_encrypt(url_key)
            changed.append("url_key")
        credential.save()
        audit_record(
            event="integrations.credential.created" if created else "integrations.credential.updated",
            tenant=tenant,
            actor=actor,
            detail={"provider": provider, "kind": ",".join(changed) or "none"},
        )
    return CredentialChange(credential=credential, url_key=url_key)


def credential_read(credential: ProviderCredential) -> Credentials:
    """Decrypted view handed to the adapters. Raises SecretUnreadable on a wrong key."""
    return Credentials(
        secret=secret_decrypt(credential.secret_encrypted),
        username=credential.username,
        url_key=secret_decrypt(credential.url_key_encrypted),
        default_currency=credential.default_currency or "USD",
    )


def chargebee_url_key(*, tenant: Tenant) -> str:
    """The tenant's current Chargebee URL segment ("" when none), for the set-up page."""
    credential = ProviderCredential.objects.filter(tenant=tenant, provider=Provider.CHARGEBEE).first()
    return secret_decrypt(credential.url_key_encrypted) if credential else ""


def link_settings_set(*, tenant: Tenant, update_url: str, actor: str = "system") -> LinkSettings:
    """Set the tenant's own payment-update page (the last link fallback). Audited."""
    with transaction.atomic():
        link, _ = LinkSettings.objects.update_or_create(tenant=tenant, defaults={"update_url": update_url})
        audit_record(event="integrations.link_settings.updated", tenant=tenant, actor=actor,
                     detail={"kind": "update_url"})
    return link
