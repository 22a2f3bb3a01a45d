"""Admin: a dispute's triage and evidence pack (with the Markdown download), the refund check,
the payments review page with triaged disputes and approval marks, and tenant scoping."""

from __future__ import annotations

from datetime import date

import pytest

from reconciliation.models import DisputeRow, Run
from reconciliation.services.sample import sample_load
from reconciliation.tests.factories import at, load
from reconciliation.tests.test_admin import staff

pytestmark = pytest.mark.django_db


@pytest.fixture
def sample():
    tenant, run = sample_load(actor="test")
    return tenant, run


def test_dispute_page_shows_triage_and_the_pack(sample) -> None:
    tenant, _ = sample
    client = staff(tenant)
    row = DisputeRow.objects.get(tenant=tenant)
    page = client.get(f"/admin/reconciliation/disputerow/{row.pk}/change/?as_of=2026-11-16")
    assert page.status_code == 200
    body = page.content.decode()
    assert "One story:" in body and "duplicate_capture" in body and "2 days left" in body
    assert "Accept the dispute" in body and "nothing has been or will be submitted" in body
    assert "Capture txn_1003b" in body
    md = client.get(f"/admin/reconciliation/disputerow/{row.pk}/evidence.md?as_of=2026-11-16")
    assert md.status_code == 200 and md["Content-Type"].startswith("text/markdown")
    assert 'filename="evidence-pack-dp_1Nw0001.md"' in md["Content-Disposition"]
    assert md.content.decode().startswith("# Evidence pack (draft) for dispute dp_1Nw0001")
    assert client.get("/admin/reconciliation/disputerow/").status_code == 200


def test_another_tenants_dispute_is_404(sample, other_tenant) -> None:
    tenant, _ = sample
    row = DisputeRow.objects.get(tenant=tenant)
    client = staff(other_tenant, username="globex")
    assert client.get(f"/admin/reconciliation/disputerow/{row.pk}/change/").status_code == 404
    assert client.get(f"/admin/reconciliation/disputerow/{row.pk}/evidence.md").status_code == 404
    listing = client.get("/admin/reconciliation/disputerow/")
    assert b"dp_1Nw0001" not in listing.content


def test_refund_check_page(sample) -> None:
    tenant, _ = sample
    client = staff(tenant)
    page = client.get("/admin/reconciliation/disputerow/refund-check/",
                      {"order_id": "NW-1003", "as_of": "2026-11-16"})
    body = page.content.decode()
    assert page.status_code == 200 and "Do not refund" in body and "disputed" in body
    assert "executes_refund: false" in body
    ok = client.get("/admin/reconciliation/disputerow/refund-check/",
                    {"order_id": "NW-1001", "amount": "10.00", "currency": "USD", "as_of": "2026-11-16"})
    assert "Looks appropriate and safe" in ok.content.decode() and "10.00 USD" in ok.content.decode()
    bad = client.get("/admin/reconciliation/disputerow/refund-check/", {"order_id": "NOPE"})
    assert "order_not_found" in bad.content.decode()
    other = staff_other(tenant)
    assert "order_not_found" in other.get("/admin/reconciliation/disputerow/refund-check/",
                                          {"order_id": "NW-1001"}).content.decode()


def staff_other(tenant):
    from paypilot.services import tenant_create

    return staff(tenant_create(slug="initech", name="Initech"), username="initech")


def test_review_page_shows_triaged_disputes_marks_and_a_live_dispute(sample) -> None:
    tenant, run = sample
    client = staff(tenant)
    body = client.get(f"/admin/reconciliation/run/{run.pk}/change/").content.decode()
    assert "dp_1Nw0001" in body and "One story:" in body and "low (" in body
    assert "[only a person can approve]" in body and "Do not refund the extra capture" in body
    assert "New inputs since this run" not in body
    load(tenant, "disputes", [{"dispute_id": "dp_new", "charge_id": "ch_3Nw1004", "amount_minor": 12000,
                               "currency": "USD", "reason": "fraudulent", "status": "needs_response",
                               "evidence_due_by": date(2026, 12, 1), "created_at": at("2026-11-15")}])
    body = client.get(f"/admin/reconciliation/run/{run.pk}/change/").content.decode()
    assert "Other open disputes" in body and "dp_new" in body and "New inputs since this run" in body
    done = client.post(f"/admin/reconciliation/run/{run.pk}/refresh/")
    assert done.status_code == 302
    assert Run.objects.filter(tenant=tenant, as_of=run.as_of).count() == 2
