"""Ledger admin: read-only invoices with filters and inline history, customer editing rights,
and the report page with its charts."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from ledger.models import Customer, Invoice, InvoiceRefund, LedgerInconsistency
from ledger.services import (
    customer_upsert,
    invoice_mark_messaged,
    invoice_record_failure,
    invoice_record_payment,
    invoice_record_refund,
)
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client(client):  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_superuser("root", "", "pw-for-tests-only")
    client.force_login(user)
    return client


@pytest.fixture
def staff_client(client):  # type: ignore[no-untyped-def]
    """A staff user allowed to view ledger rows but not to change customers."""
    user = get_user_model().objects.create_user("staff", "", "pw-for-tests-only", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_invoice", "view_customer"]))
    client.force_login(user)
    return client


def test_invoice_list_filters_and_read_only_detail(superuser_client, record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure("in_admin", amount_minor=123456).invoice
    invoice_mark_messaged(invoice=invoice, event_ref="send:42")
    listing = superuser_client.get("/admin/ledger/invoice/?state=messaged&arm=treatment&currency=USD&provider=stripe")
    assert listing.status_code == 200
    assert "in_admin" in listing.content.decode() and "1,234.56" in listing.content.decode()
    assert "in_admin" not in superuser_client.get("/admin/ledger/invoice/?state=recovered").content.decode()

    detail = superuser_client.get(f"/admin/ledger/invoice/{invoice.pk}/change/")
    html = detail.content.decode()
    assert detail.status_code == 200
    assert "send:42" in html and "payment_failed" in html  # transitions inline
    assert 'name="_save"' not in html  # nothing to save: read-only
    change_url = f"/admin/ledger/invoice/{invoice.pk}/change/"
    assert superuser_client.post(change_url, {"state": "recovered"}).status_code == 403
    assert superuser_client.get("/admin/ledger/invoice/add/").status_code == 403
    assert superuser_client.post(f"/admin/ledger/invoice/{invoice.pk}/delete/", {"post": "yes"}).status_code == 403
    invoice.refresh_from_db()
    assert invoice.state == "messaged"


def test_superuser_edits_a_customer_and_it_is_audited(superuser_client, tenant) -> None:  # type: ignore[no-untyped-def]
    customer = customer_upsert(tenant=tenant, external_id="cus_1", name="Old", currency="usd")
    response = superuser_client.post(f"/admin/ledger/customer/{customer.pk}/change/", {
        "name": "New Name", "email": "new@example.com", "plan": "Pro", "mrr_minor": "1000",
        "currency": "eur", "locale": "de", "payment_history": "[]",
    })
    assert response.status_code == 302
    customer.refresh_from_db()
    assert (customer.name, customer.currency, customer.locale) == ("New Name", "EUR", "de")
    event = AuditEvent.objects.get(event="ledger.customer.edited")
    assert event.detail["customer"] == customer.pk and "New Name" not in str(event.detail)


def test_staff_without_tenant_admin_rights_cannot_edit_customers(staff_client, tenant) -> None:  # type: ignore[no-untyped-def]
    customer = customer_upsert(tenant=tenant, external_id="cus_1", name="Kept")
    response = staff_client.post(f"/admin/ledger/customer/{customer.pk}/change/", {"name": "Changed"})
    assert response.status_code in (403, 302, 404)
    customer.refresh_from_db()
    assert customer.name == "Kept"
    assert not AuditEvent.objects.filter(event="ledger.customer.edited").exists()


def test_staff_without_a_tenant_membership_sees_no_rows(staff_client, record_failure) -> None:  # type: ignore[no-untyped-def]
    record_failure("in_secret")
    response = staff_client.get("/admin/ledger/invoice/")
    assert response.status_code == 200
    assert "in_secret" not in response.content.decode()


def test_customers_are_never_added_or_deleted_in_the_admin(superuser_client, tenant) -> None:  # type: ignore[no-untyped-def]
    customer = customer_upsert(tenant=tenant, external_id="cus_1", name="Kept")
    assert superuser_client.get("/admin/ledger/customer/add/").status_code == 403
    assert superuser_client.post(f"/admin/ledger/customer/{customer.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Customer.objects.filter(pk=customer.pk).exists()


def test_report_page_draws_rates_with_sample_sizes_and_weekly_amounts(  # type: ignore[no-untyped-def]
    superuser_client, tenant, other_tenant, record_failure
) -> None:
    record_failure("in_1", amount_minor=1500, currency="jpy")
    response = superuser_client.get("/admin/ledger/invoice/report/?tenant=acme")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.count('role="img"') == 3  # rates per arm + cohort lift + one weekly chart (JPY)
    assert "n=0" in html  # the failure is minutes old: maturing, not in the arms yet
    assert "1 invoices are maturing" in html
    assert "Failed vs recovered (net) per failure week (JPY)" in html
    assert "Lift per weekly cohort" in html
    assert "1,500" in html
    assert "withheld" in html.lower()
    assert "globex" in html  # the tenant chooser lists every tenant for a superuser


def test_report_page_needs_view_permission(client, tenant) -> None:  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_user("nobody", "", "pw-for-tests-only", is_staff=True)
    client.force_login(user)
    assert client.get("/admin/ledger/invoice/report/").status_code == 403


@pytest.fixture
def member_client(client, tenant):  # type: ignore[no-untyped-def]
    """A tenant admin of `acme`: staff, an admin membership, and the customer-editing right."""
    # The membership model belongs to approvals (below ledger): reached through the user model.
    membership = get_user_model()._meta.get_field("admin_membership").related_model
    user = get_user_model().objects.create_user("finance", "", "pw-for-tests-only", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(
        codename__in=["view_invoice", "view_customer", "change_customer"]))
    membership.objects.create(user=user, tenant=tenant)
    client.force_login(user)
    return client


def test_tenant_admin_sees_and_edits_only_their_tenant(member_client, tenant, other_tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    record_failure("in_mine")
    invoice_record_failure(tenant=other_tenant, provider="stripe", external_invoice_id="in_theirs",
                           amount_minor=1, currency="usd", failure_code="card_expired")
    listing = member_client.get("/admin/ledger/invoice/").content.decode()
    assert "in_mine" in listing and "in_theirs" not in listing

    mine = customer_upsert(tenant=tenant, external_id="cus_mine", name="Mine")
    theirs = customer_upsert(tenant=other_tenant, external_id="cus_theirs", name="Theirs")
    form = {"name": "Edited", "email": "", "plan": "", "mrr_minor": "", "currency": "",
            "locale": "", "payment_history": "[]"}
    assert member_client.post(f"/admin/ledger/customer/{mine.pk}/change/", form).status_code == 302
    assert member_client.post(f"/admin/ledger/customer/{theirs.pk}/change/", form).status_code == 404
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.name, theirs.name) == ("Edited", "Theirs")

    report = member_client.get("/admin/ledger/invoice/report/?tenant=globex").content.decode()
    assert "Recovery report: acme" in report and "globex" not in report


def test_report_page_downloads_csv(superuser_client, tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    record_failure("in_csv", amount_minor=1500, currency="jpy")
    response = superuser_client.get("/admin/ledger/invoice/report/?tenant=acme&format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert 'filename="recovery-report-acme.csv"' in response["Content-Disposition"]
    body = response.content.decode()
    assert body.startswith("section,week,arm,currency,invoices")
    assert "cohort," in body and ",JPY," in body


def test_holdout_form_sets_the_tenant_holdout_and_audits_it(superuser_client, tenant) -> None:  # type: ignore[no-untyped-def]
    page = superuser_client.get("/admin/ledger/invoice/report/?tenant=acme").content.decode()
    assert "Change this tenant&#x27;s holdout" in page or "Change this tenant's holdout" in page
    response = superuser_client.post("/admin/ledger/invoice/report/",
                                     {"tenant": "acme", "pct": "20", "start": "2026-12-07"})
    assert response.status_code == 302 and response["Location"].endswith("?tenant=acme")
    tenant.refresh_from_db()
    assert (tenant.holdout_pct, tenant.holdout_start.isoformat()) == (20, "2026-12-07")
    audit = AuditEvent.objects.get(event="ledger.holdout.changed")
    assert audit.tenant == tenant and audit.detail == {
        "holdout_from": {"pct": None, "start": None}, "holdout_to": {"pct": 20, "start": "2026-12-07"}}
    assert audit.actor.startswith("user:")

    bad = superuser_client.post("/admin/ledger/invoice/report/", {"tenant": "acme", "pct": "101"}, follow=True)
    assert "Holdout not changed" in bad.content.decode()
    superuser_client.post("/admin/ledger/invoice/report/", {"tenant": "acme", "pct": "20", "start": "2026-12-07"})
    assert AuditEvent.objects.filter(event="ledger.holdout.changed").count() == 1  # unchanged: no audit
    tenant.refresh_from_db()
    assert tenant.holdout_pct == 20


def test_holdout_form_needs_the_change_tenant_right(member_client, tenant) -> None:  # type: ignore[no-untyped-def]
    page = member_client.get("/admin/ledger/invoice/report/").content.decode()
    assert "Save holdout" not in page
    assert member_client.post("/admin/ledger/invoice/report/", {"tenant": "acme", "pct": "50"}).status_code == 403
    tenant.refresh_from_db()
    assert tenant.holdout_pct is None


def _recovered_with_refund_and_mismatch(tenant, record_failure, invoice_id):  # type: ignore[no-untyped-def]
    record_failure(invoice_id, amount_minor=5000)
    invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id=invoice_id,
                           amount_paid_minor=5000, currency="jpy", event_ref="stripe:evt_jpy")
    invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id=invoice_id,
                           amount_paid_minor=5000, currency="usd")
    invoice_record_refund(tenant=tenant, provider="stripe", external_invoice_id=invoice_id,
                          refund_ref=f"re_{invoice_id}", currency="usd", amount_minor=1250)
    return Invoice.objects.get(tenant=tenant, external_invoice_id=invoice_id)


def test_invoice_page_shows_refunds_times_and_a_link_to_its_inconsistencies(superuser_client, tenant,
                                                                          record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice = _recovered_with_refund_and_mismatch(tenant, record_failure, "in_refunded")
    html = superuser_client.get(f"/admin/ledger/invoice/{invoice.pk}/change/").content.decode()
    assert "re_in_refunded" in html  # the refund inline
    assert "Refunded minor" in html and "Failed recorded at" in html
    link = f"/admin/ledger/ledgerinconsistency/?invoice__id__exact={invoice.pk}"
    assert f'href="{link}"' in html and "1 recorded" in html
    listing = superuser_client.get(link)
    assert listing.status_code == 200
    assert [row.kind for row in listing.context["cl"].result_list] == ["currency_mismatch"]


def test_refund_and_inconsistency_admins_are_read_only(superuser_client, tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    _recovered_with_refund_and_mismatch(tenant, record_failure, "in_ro")
    for model, name in ((InvoiceRefund, "invoicerefund"), (LedgerInconsistency, "ledgerinconsistency")):
        row = model.objects.get()
        base = f"/admin/ledger/{name}/"
        assert superuser_client.get(base).status_code == 200
        detail = superuser_client.get(f"{base}{row.pk}/change/")
        assert detail.status_code == 200 and 'name="_save"' not in detail.content.decode()
        assert superuser_client.get(f"{base}add/").status_code == 403
        assert superuser_client.post(f"{base}{row.pk}/delete/", {"post": "yes"}).status_code == 403
        assert model.objects.count() == 1


def test_refunds_and_inconsistencies_are_tenant_scoped(client, tenant, other_tenant) -> None:  # type: ignore[no-untyped-def]
    def record(t, invoice_id):  # type: ignore[no-untyped-def]
        return lambda *a, **k: invoice_record_failure(
            tenant=t, provider="stripe", external_invoice_id=invoice_id, amount_minor=5000, currency="usd",
            failure_code="card_expired")

    _recovered_with_refund_and_mismatch(tenant, record(tenant, "in_mine"), "in_mine")
    _recovered_with_refund_and_mismatch(other_tenant, record(other_tenant, "in_theirs"), "in_theirs")
    membership = get_user_model()._meta.get_field("admin_membership").related_model
    user = get_user_model().objects.create_user("viewer", "", "pw-for-tests-only", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(
        codename__in=["view_invoicerefund", "view_ledgerinconsistency"]))
    membership.objects.create(user=user, tenant=tenant)
    client.force_login(user)

    refunds = client.get("/admin/ledger/invoicerefund/").context["cl"].result_list
    assert [r.refund_ref for r in refunds] == ["re_in_mine"]
    found = client.get("/admin/ledger/ledgerinconsistency/").context["cl"].result_list
    assert [r.external_invoice_id for r in found] == ["in_mine"]
    theirs = LedgerInconsistency.objects.get(tenant=other_tenant)
    assert client.get(f"/admin/ledger/ledgerinconsistency/{theirs.pk}/change/").status_code == 404
