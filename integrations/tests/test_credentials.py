"""Provider secrets: encrypted at rest, never shown back, audited without values."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from integrations.crypto import SecretUnreadable, secret_decrypt, secret_encrypt
from integrations.models import ProviderCredential
from integrations.services import chargebee_url_key, credential_read, credential_set
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_secret_is_stored_encrypted_and_reads_back(tenant):
    credential_set(tenant=tenant, provider="stripe", secret="whsec_abc123", api_key="rk_test_456")
    row = ProviderCredential.objects.get()
    assert "whsec_abc123" not in row.secret_encrypted and "rk_test_456" not in row.api_key_encrypted
    assert credential_read(row).secret == "whsec_abc123"
    audit = AuditEvent.objects.get(event="integrations.credential.created")
    assert audit.detail == {"provider": "stripe", "kind": "secret,api_key"}


def test_configured_key_and_rotation(settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.PAYPILOT_SECRETS_KEY = old
    token = secret_encrypt("whsec_x")
    settings.PAYPILOT_SECRETS_KEY = f"{new},{old}"  # new key first: encrypts; both decrypt
    assert secret_decrypt(token) == "whsec_x"
    settings.PAYPILOT_SECRETS_KEY = new
    with pytest.raises(SecretUnreadable):
        secret_decrypt(token)


def test_key_derived_from_secret_key_when_unset(settings):
    settings.PAYPILOT_SECRETS_KEY = ""
    token = secret_encrypt("whsec_y")
    settings.SECRET_KEY = "another-secret-key"
    with pytest.raises(SecretUnreadable):
        secret_decrypt(token)


def test_chargebee_gets_an_unguessable_url_key_once(tenant):
    first = credential_set(tenant=tenant, provider="chargebee", secret="pw", username="cb")
    assert len(first.url_key) >= 32
    again = credential_set(tenant=tenant, provider="chargebee", secret="pw2")
    assert again.url_key == "" and chargebee_url_key(tenant=tenant) == first.url_key
    rotated = credential_set(tenant=tenant, provider="chargebee", rotate_url_key=True)
    assert rotated.url_key not in ("", first.url_key)


def test_unreadable_secret_answers_500_and_stores_nothing(settings, tenant, client):
    from integrations.models import WebhookEvent

    settings.PAYPILOT_SECRETS_KEY = Fernet.generate_key().decode()
    credential_set(tenant=tenant, provider="stripe", secret="whsec_z")
    settings.PAYPILOT_SECRETS_KEY = Fernet.generate_key().decode()
    response = client.post("/t/acme/webhooks/stripe", data=b"{}", content_type="application/json")
    assert response.status_code == 500 and response.json()["error"] == "secret_unreadable"
    assert not WebhookEvent.objects.exists()


def test_webhook_credential_command(tenant, monkeypatch):
    from io import StringIO

    from django.core.management import call_command

    monkeypatch.setenv("MY_SECRET", "whsec_from_env")
    out = StringIO()
    call_command("webhook_credential", tenant="acme", provider="stripe", secret_env="MY_SECRET", stdout=out)
    assert "/t/acme/webhooks/stripe" in out.getvalue() and "whsec_from_env" not in out.getvalue()
    assert credential_read(ProviderCredential.objects.get()).secret == "whsec_from_env"
