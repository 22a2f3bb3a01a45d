"""Admin: read a pricing document, see each value with its check, confirm with a date; scoped to
the user's tenant and refused without the permission for it."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from paypilot.models import AuditEvent
from reconciliation.models import ContractProposal, ContractVersion

pytestmark = pytest.mark.django_db

PRICING = (b"<html><body><h1>Pricing</h1><table><tr><td>Cards</td><td>2.9% + 30&cent;</td></tr>"
           b"<tr><td>Chargeback fee</td><td>$15.00</td></tr>"
           b"<tr><td>Payouts</td><td>2 business days</td></tr></table></body></html>")
UPLOAD = "/admin/reconciliation/contractproposal/upload/"


def staff(tenant, username: str, *codenames: str) -> Client:
    user = get_user_model().objects.create_user(username=username, password="x", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="reconciliation",
                                                         codename__in=codenames))
    membership = get_user_model()._meta.get_field("admin_membership").related_model
    membership.objects.create(user=user, tenant=tenant)
    client = Client()
    client.force_login(user)
    return client


ALL = ("view_contractproposal", "add_contractproposal", "confirm_contractproposal")


def upload(client: Client, data: bytes = PRICING, name: str = "pricing.html"):  # type: ignore[no-untyped-def]
    return client.post(UPLOAD, {"document": SimpleUploadedFile(name, data)})


def test_upload_shows_each_value_with_its_quote_then_confirm_saves_a_version(tenant) -> None:
    client = staff(tenant, "ops", *ALL)
    assert client.get("/admin/reconciliation/contractproposal/").status_code == 200
    done = upload(client)
    proposal = ContractProposal.objects.get()
    assert done.status_code == 302 and done["Location"].endswith(f"/contractproposal/{proposal.pk}/change/")
    assert proposal.tenant == tenant and proposal.document_format == "html"
    page = client.get(done["Location"])
    assert page.status_code == 200 and b"Cards | 2.9% + 30\xc2\xa2" in page.content
    assert b"Confirm and save these terms" in page.content and not ContractVersion.objects.exists()
    saved = client.post(f"/admin/reconciliation/contractproposal/{proposal.pk}/confirm/",
                        {"effective_from": "2026-10-01"})
    assert saved.status_code == 302
    version = ContractVersion.objects.get()
    assert (version.tenant, version.fixed_minor, version.chargeback_fee_minor, version.payout_delay_days) == (
        tenant, 30, 1500, 2)
    user_id = get_user_model().objects.get(username="ops").pk
    assert AuditEvent.objects.get(event="reconciliation.contract.confirmed").actor == f"user:{user_id}"
    assert AuditEvent.objects.get(event="reconciliation.contract.proposed").actor == f"user:{user_id}"


def test_a_failing_value_is_shown_with_its_reason_and_cannot_be_confirmed(tenant) -> None:
    client = staff(tenant, "ops", *ALL)
    upload(client, b"Cards: 2.9% + 30c\nPayouts: T+2\n", "pricing.txt")
    proposal = ContractProposal.objects.get()
    page = client.get(f"/admin/reconciliation/contractproposal/{proposal.pk}/change/")
    assert b"term not found" in page.content and b"term_not_found" in page.content
    assert b"Confirm and save these terms" not in page.content and b"cannot be confirmed" in page.content
    refused = client.post(f"/admin/reconciliation/contractproposal/{proposal.pk}/confirm/",
                          {"effective_from": "2026-10-01"}, follow=True)
    assert b"proposal_not_confirmable" in refused.content and not ContractVersion.objects.exists()


def test_an_unreadable_document_is_refused_with_its_reason(tenant) -> None:
    page = upload(staff(tenant, "ops", *ALL), b"%PDF-1.4\ngarbage", "fees.pdf")
    assert page.status_code == 200 and b"pdf_unreadable" in page.content and not ContractProposal.objects.exists()


def test_the_wrong_role_is_refused(tenant) -> None:
    viewer = staff(tenant, "viewer", "view_contractproposal")
    assert upload(viewer).status_code == 403 and not ContractProposal.objects.exists()
    uploader = staff(tenant, "uploader", "view_contractproposal", "add_contractproposal")
    assert upload(uploader).status_code == 302
    proposal = ContractProposal.objects.get()
    page = uploader.get(f"/admin/reconciliation/contractproposal/{proposal.pk}/change/")
    assert page.status_code == 200 and b"Confirm and save these terms" not in page.content
    for client in (viewer, uploader):
        refused = client.post(f"/admin/reconciliation/contractproposal/{proposal.pk}/confirm/",
                              {"effective_from": "2026-10-01"})
        assert refused.status_code == 403
    assert not ContractVersion.objects.exists()
    assert client.post(f"/admin/reconciliation/contractproposal/{proposal.pk}/delete/", {}).status_code == 403


def test_another_tenants_staff_can_neither_see_nor_confirm(tenant, other_tenant) -> None:
    upload(staff(tenant, "ops", *ALL))
    proposal = ContractProposal.objects.get()
    rival = staff(other_tenant, "rival", *ALL)
    assert rival.get(f"/admin/reconciliation/contractproposal/{proposal.pk}/change/").status_code == 404
    assert rival.post(f"/admin/reconciliation/contractproposal/{proposal.pk}/confirm/",
                      {"effective_from": "2026-10-01"}).status_code == 404
    assert list(rival.get("/admin/reconciliation/contractproposal/").context["cl"].result_list) == []
    assert not ContractVersion.objects.exists()
    # An upload by the rival lands in the rival's tenant, whatever it sends.
    upload(rival)
    assert ContractProposal.objects.filter(tenant=other_tenant).count() == 1
