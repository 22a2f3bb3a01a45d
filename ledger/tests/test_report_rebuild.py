"""`manage.py report_rebuild`: a no-op on an empty ledger, repairs a damaged rollup, re-runs safely."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from ledger.models import ReportRollup
from ledger.selectors import report_build, report_recompute
from ledger.tests.factories import InvoiceFactory

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("report_rebuild", *args, stdout=out)
    return out.getvalue()


def test_rebuild_on_an_empty_ledger_stores_nothing(tenant) -> None:  # type: ignore[no-untyped-def]
    assert "1 tenant(s), 0 rollup row(s)" in run()
    assert not ReportRollup.objects.exists()


def test_rebuild_repairs_one_tenant_and_is_safe_to_rerun(tenant, other_tenant) -> None:  # type: ignore[no-untyped-def]
    InvoiceFactory.create_batch(4, tenant=tenant, currency="EUR")
    InvoiceFactory.create_batch(2, tenant=other_tenant)
    ReportRollup.objects.all().delete()  # a restore that brought the invoices but not the rollup
    assert report_build(tenant=tenant)["totals"]["count"] == 0
    assert "1 tenant(s), 1 rollup row(s)" in run("--tenant", "acme")
    now = timezone.now()
    assert report_build(tenant=tenant, now=now) == report_recompute(tenant=tenant, now=now)
    assert report_build(tenant=tenant)["totals"]["count"] == 4
    assert report_build(tenant=other_tenant)["totals"]["count"] == 0  # not asked for
    run()
    run()
    assert report_build(tenant=other_tenant)["totals"]["count"] == 2
    assert ReportRollup.objects.count() == 2


def test_unknown_tenant_is_an_error(tenant) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CommandError):
        run("--tenant", "nope")
