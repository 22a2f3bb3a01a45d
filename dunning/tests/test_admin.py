"""The dunning admin pages render for a superuser and offer no add, change or delete."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from dunning.pipeline import RecoveryInput
from dunning.services import run_recovery


@pytest.mark.django_db
def test_draft_admin_is_read_only(tenant, client) -> None:  # type: ignore[no-untyped-def]
    draft = run_recovery(tenant=tenant, store=True, event=RecoveryInput(
        customer_id="c", amount_minor=100, currency="USD", failure_code="card_expired")).draft
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-not-used-123")
    client.force_login(user)
    assert client.get("/admin/dunning/draft/").status_code == 200
    assert client.get(f"/admin/dunning/draft/{draft.pk}/change/").status_code == 200  # type: ignore[union-attr]
    assert client.get("/admin/dunning/draft/add/").status_code == 403
    assert client.get("/admin/dunning/llmusage/").status_code == 200
