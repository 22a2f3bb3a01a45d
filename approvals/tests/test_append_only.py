"""Suppressed sends and draft edits are append-only at the database."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, transaction

from approvals.models import DraftEdit, SuppressedSend
from approvals.sending import send_approved
from approvals.services import approval_edit


def test_suppressed_send_refuses_update_and_delete(tenant, make_approval, sending_on):
    approval = make_approval(tenant)
    send_approved(approval_id=approval.pk)  # pending: refused, not_approved
    row = SuppressedSend.objects.get(approval=approval)
    with pytest.raises(DatabaseError), transaction.atomic():
        SuppressedSend.objects.filter(pk=row.pk).update(reason="other")
    with pytest.raises(DatabaseError), transaction.atomic():
        SuppressedSend.objects.filter(pk=row.pk).delete()


def test_draft_edit_refuses_update(tenant, approver, make_approval):
    approval = make_approval(tenant)
    approval_edit(approval=approval, user=approver, subject="New subject", body="New body text.")
    edit = DraftEdit.objects.get(approval=approval)
    with pytest.raises(DatabaseError), transaction.atomic():
        DraftEdit.objects.filter(pk=edit.pk).update(body_after="changed")
