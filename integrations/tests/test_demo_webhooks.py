"""manage.py demo_webhooks: signed deliveries of each provider's shape, in process or over HTTP."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from integrations.demo import demo_credentials_ensure
from integrations.models import WebhookEvent
from ledger.models import Invoice


def _run(*args: str) -> dict:
    out = StringIO()
    call_command("demo_webhooks", *args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.mark.django_db
@pytest.mark.parametrize("provider", ["stripe", "recharge", "chargebee"])
def test_in_process_deliveries_are_verified_stored_and_processed(tenant, provider, recovery):
    result = _run("--tenant", tenant.slug, "--count", "12", "--provider", provider, "--seed", "7")
    assert result["statuses"] == {"200": 12}
    events = WebhookEvent.objects.filter(tenant=tenant, provider=provider)
    assert events.count() == 12
    assert not events.filter(status="failed").exists()
    assert Invoice.objects.filter(tenant=tenant, provider=provider).exists()


@pytest.mark.django_db
def test_deliveries_are_signed_with_the_tenants_own_secret(tenant, recovery):
    demo_credentials_ensure(tenant=tenant, providers=("stripe",))
    _run("--tenant", tenant.slug, "--count", "3")
    from integrations.models import ProviderCredential
    from integrations.services import credential_set

    # Rotate the secret without the demo knowing: the next run signs with the new one and is
    # still accepted, so it reads the stored secret rather than carrying its own.
    credential_set(tenant=tenant, provider="stripe", secret="whsec_rotated_secret_value_123")
    assert ProviderCredential.objects.filter(tenant=tenant, provider="stripe").count() == 1
    assert _run("--tenant", tenant.slug, "--count", "3")["statuses"] == {"200": 3}


def test_deliveries_to_a_running_server(committed_db, live_server, tenant, recovery):
    result = _run("--tenant", tenant.slug, "--count", "5", "--url", live_server.url, "--rate", "50")
    assert result["statuses"] == {"200": 5} and result["target"] == live_server.url
    assert WebhookEvent.objects.filter(tenant=tenant).count() == 5


@pytest.mark.django_db
def test_unknown_tenant_and_bad_counts_are_refused(tenant):
    with pytest.raises(CommandError, match="no tenant"):
        _run("--tenant", "nobody", "--count", "1")
    with pytest.raises(CommandError, match="at least 1"):
        _run("--tenant", tenant.slug, "--count", "0")
