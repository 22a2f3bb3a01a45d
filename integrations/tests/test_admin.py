"""Admin: inbox filters, the confirmed "reprocess" action, write-only credential fields."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

from integrations.models import ProviderCredential, WebhookEvent
from integrations.services import credential_read, credential_set
from integrations.tests.factories import WebhookEventFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    user = User.objects.create_superuser("root", "root@example.com", "pw-for-tests-only")
    client.force_login(user)
    return client


def test_changelist_with_filters(admin_client, tenant):
    WebhookEventFactory(tenant=tenant, status="failed")
    WebhookEventFactory(tenant=tenant, provider="recharge", event_key="charge/failed:1:1")
    response = admin_client.get("/admin/integrations/webhookevent/", {"status__exact": "failed"})
    assert response.status_code == 200
    assert response.context["cl"].result_count == 1


def test_reprocess_action_confirms_then_requeues(admin_client, tenant, recovery):
    failed = WebhookEventFactory(tenant=tenant, status="failed", error="boom", attempts=5)
    processed = WebhookEventFactory(tenant=tenant, status="processed", outcome="recovered")
    url = "/admin/integrations/webhookevent/"
    data = {"action": "reprocess", "_selected_action": [failed.pk, processed.pk]}

    confirm = admin_client.post(url, data)
    assert confirm.status_code == 200 and b"Yes, reprocess" in confirm.content
    failed.refresh_from_db()
    assert failed.status == "failed"  # nothing happens before confirmation

    done = admin_client.post(url, {**data, "post": "yes"}, follow=True)
    assert done.status_code == 200
    failed.refresh_from_db()
    processed.refresh_from_db()
    # the failed one ran again (sync queue in tests): its unhandled type is now ignored
    assert (failed.status, failed.outcome, failed.attempts) == ("ignored", "unhandled_event_type", 6)
    assert (processed.status, processed.outcome) == ("processed", "recovered")
    messages = [str(m) for m in done.context["messages"]]
    assert any("1 event(s) queued" in m for m in messages)


def test_reprocess_needs_its_permission(client, tenant):
    user = User.objects.create_user("staff", "s@example.com", "pw-for-tests-only", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_webhookevent"))
    from approvals.models import AdminMembership

    AdminMembership.objects.create(user=user, tenant=tenant)
    client.force_login(user)
    event = WebhookEventFactory(tenant=tenant, status="failed")
    response = client.get("/admin/integrations/webhookevent/")
    assert response.status_code == 200
    assert "reprocess" not in dict(response.context["cl"].model_admin.get_actions(response.wsgi_request))
    client.post("/admin/integrations/webhookevent/", {"action": "reprocess", "_selected_action": [event.pk],
                                                      "post": "yes"})
    event.refresh_from_db()
    assert event.status == "failed"


def test_events_cannot_be_added_changed_or_deleted(admin_client, tenant):
    event = WebhookEventFactory(tenant=tenant)
    assert admin_client.get("/admin/integrations/webhookevent/add/").status_code == 403
    page = admin_client.get(f"/admin/integrations/webhookevent/{event.pk}/change/")
    assert page.status_code == 200 and b'name="status"' not in page.content
    assert admin_client.post(f"/admin/integrations/webhookevent/{event.pk}/delete/").status_code == 403


def test_credential_form_is_write_only(admin_client, tenant):
    credential_set(tenant=tenant, provider="stripe", secret="whsec_visible_never")
    row = ProviderCredential.objects.get()
    page = admin_client.get(f"/admin/integrations/providercredential/{row.pk}/change/")
    assert page.status_code == 200
    assert b"whsec_visible_never" not in page.content and row.secret_encrypted.encode() not in page.content

    # blank keeps the stored secret
    admin_client.post(f"/admin/integrations/providercredential/{row.pk}/change/",
                      {"username": "", "default_currency": "USD", "secret": "", "api_key": ""})
    assert credential_read(ProviderCredential.objects.get()).secret == "whsec_visible_never"
    # a new value replaces it
    admin_client.post(f"/admin/integrations/providercredential/{row.pk}/change/",
                      {"username": "", "default_currency": "USD", "secret": "whsec_new", "api_key": ""})
    assert credential_read(ProviderCredential.objects.get()).secret == "whsec_new"


def test_webhook_event_detail_shows_raw_body(admin_client, tenant):
    event = WebhookEventFactory(tenant=tenant)
    page = admin_client.get(f"/admin/integrations/webhookevent/{event.pk}/change/")
    assert event.event_key.encode() in page.content
    assert WebhookEvent.objects.count() == 1
