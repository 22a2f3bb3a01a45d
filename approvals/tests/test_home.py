"""The finance home page (the admin index): every figure, each link leading to the list
behind it, tenant scoping, and the platform admin's tenant pick (issue 16)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from html import unescape

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from django.utils import timezone

from approvals.models import ApprovalRequest
from approvals.sending import send_approved
from approvals.services import approval_approve
from approvals.tests.factories import UserFactory
from approvals.workspace import COUNT_CAP, Capped, capped_count, workspace_read
from ledger.services import invoice_record_failure, invoice_record_payment
from ledger.tests.factories import CustomerFactory
from reconciliation.models import Run

pytestmark = pytest.mark.django_db

HOME = reverse("admin:index")
Status = ApprovalRequest.Status


def link(html: str, element_id: str) -> str:
    found = re.search(rf'<a href="([^"]+)" id="{element_id}">([^<]*)</a>', html)
    assert found, f"no link #{element_id}"
    return unescape(found.group(1))


def figure(html: str, element_id: str) -> str:
    found = re.search(rf'id="{element_id}">([^<]*)</a>', html)
    assert found, f"no figure #{element_id}"
    return unescape(found.group(1))


@pytest.fixture
def workspace(tenant, other_tenant, make_approval, approver, settings):  # type: ignore[no-untyped-def]
    """Four pending drafts (one expiring within the day, one high value approved once), one
    approved and refused at the dry-run gate, a recovered invoice and a reconciliation run."""
    settings.PAYPILOT_HIGH_VALUE_ANNUAL = 100
    now = timezone.now()
    drafts = [make_approval(tenant, subject=f"Pending {n}") for n in range(4)]
    ApprovalRequest.objects.filter(pk=drafts[0].pk).update(expires_at=now + timedelta(hours=5))
    second = drafts[1]
    approval_approve(approval=second, user=approver)  # high value: the first of two
    settings.PAYPILOT_HIGH_VALUE_ANNUAL = 0
    approved = make_approval(tenant, subject="Approved, dry run")
    approval_approve(approval=approved, user=approver)
    send_approved(approval_id=approved.pk)  # sending is off: the sending_enabled gate refuses
    customer = CustomerFactory(tenant=tenant)
    invoice_record_failure(tenant=tenant, provider="stripe", external_invoice_id="in_paid", amount_minor=12000,
                           currency="EUR", failure_code="card_expired", customer=customer)
    invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id="in_paid",
                           amount_paid_minor=12000, currency="EUR")
    make_approval(other_tenant, subject="Globex pending")
    result = {"money_in_breaks_minor": {"USD": 4900}, "disputes_due": [
        {"dispute_id": "dp_1", "charge_id": "ch_1", "due_by": "2026-12-04", "days_left": 2,
         "amount_minor": 2500, "currency": "USD"}], "todo": []}
    Run.objects.create(tenant=tenant, as_of=now.date(), input_digest="d" * 64, result_json=json.dumps(result),
                       result_sha256="s" * 64, match_rate=0.9, breaks_count=1, actor="user:1")
    return {"drafts": drafts, "second": second, "approved": approved}


def test_the_figures_are_right(tenant, workspace):
    ws = workspace_read(tenant=tenant)
    assert str(ws.pending) == "4"
    assert str(ws.expiring) == "1" and str(ws.second_approver) == "1"
    assert ws.oldest is not None and ws.oldest.pk == workspace["drafts"][0].pk  # the first to expire
    assert ws.at_risk == {"USD": 4 * 4900 + 4900}  # five open invoices (the approved one is still unpaid)
    assert ws.recovered_month == {"EUR": 12000}
    assert ws.suppressed_week == [("sending_enabled", 1)]
    assert ws.recon is not None and ws.recon["money_in_breaks"] == {"USD": 4900}
    assert ws.recon["disputes_due"] == 1 and ws.recon["disputes_money"] == {"USD": 2500}
    assert ws.attribution["lift_pp"] is None  # too few invoices: withheld


def test_counts_stop_at_the_cap(tenant, make_approval):
    make_approval(tenant)
    assert capped_count(ApprovalRequest.objects.all()) == Capped(1, False)
    assert str(Capped(COUNT_CAP, True)) == "10,000+"


def test_home_page_shows_each_figure_linked_to_its_list(client, approver, tenant, workspace):
    client.force_login(approver)
    assert "pp-card-recon" not in client.get(HOME).content.decode()  # only with the list it links to
    approver.user_permissions.add(*Permission.objects.filter(content_type__app_label="reconciliation",
                                                             codename__in=["view_run", "view_break"]))
    approver = User.objects.get(pk=approver.pk)  # permissions are cached on the instance
    client.force_login(approver)
    html = client.get(HOME).content.decode()
    assert "Today at Acme Ltd" in html and 'id="pp-sending-off"' in html
    assert figure(html, "pp-fig-pending") == "4"
    assert figure(html, "pp-fig-expiring") == "1" and figure(html, "pp-fig-second") == "1"
    assert "120.00 EUR" in html and "49.00 USD" in html and "Sending switched on" in html
    assert "Globex" not in html
    # the report's words, never its codes
    assert "observational_untouched" not in html and "Lift withheld" not in html
    assert ("too few invoices have had their full recovery window" in html
            if workspace_read(tenant=tenant).holdout_pct else "no invoices are held out" in html)
    assert "All lists" in html  # Django's list of models stays reachable

    queue = client.get(link(html, "pp-fig-pending")).content.decode()
    assert all(f"Pending {n}" in queue for n in range(4)) and "Approved, dry run" not in queue
    expiring = client.get(link(html, "pp-fig-expiring")).content.decode()
    assert "Pending 0" in expiring and "Pending 2" not in expiring
    second = client.get(link(html, "pp-fig-second")).content.decode()
    assert "Pending 1" in second and "Pending 0" not in second
    assert client.get(link(html, "pp-fig-oldest")).status_code == 200
    disputes = client.get(link(html, "pp-fig-disputes"))
    assert disputes.status_code == 200 and "Payments review" in disputes.content.decode()
    risk_links = re.findall(r'href="(/admin/ledger/invoice/\?state__in=[^"]+)"', html)
    assert risk_links and client.get(unescape(risk_links[0])).status_code == 200
    recovered = re.findall(r'href="(/admin/ledger/invoice/\?state__exact=recovered[^"]+)"', html)
    page = client.get(unescape(recovered[0]))
    assert page.status_code == 200 and "in_paid" in page.content.decode()
    gate = re.findall(r'href="(/admin/approvals/suppressedsend/\?gate=[^"]+)"', html)
    page = client.get(unescape(gate[0]))
    assert page.status_code == 200 and "sending_enabled" in page.content.decode()


def test_platform_admin_picks_the_tenant(client, workspace, other_tenant):
    admin_user = User.objects.create_superuser("root", "root@example.com", "pw-long-enough-123")
    client.force_login(admin_user)
    html = client.get(HOME).content.decode()
    assert 'id="pp-tenant-pick"' in html and "Today at Acme Ltd" in html  # the first by slug
    globex = client.get(HOME, {"tenant": "globex"}).content.decode()
    assert "Today at Globex Corp" in globex and figure(globex, "pp-fig-pending") == "1"
    queue = client.get(link(globex, "pp-fig-pending")).content.decode()
    assert "Globex pending" in queue and "Pending 0" not in queue


def test_users_who_may_not_view_approvals_get_the_plain_index(client, tenant):
    staff = UserFactory(is_staff=True)
    client.force_login(staff)
    html = client.get(HOME).content.decode()
    assert "pp-home" not in html and "Site administration" in html
