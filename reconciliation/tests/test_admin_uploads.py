"""Both admin upload pages (exports, pricing documents) go through one upload helper: same tenant rule, same limit."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings

from reconciliation.admin import imports as imports_admin
from reconciliation.admin import proposals as proposals_admin
from reconciliation.admin.uploads import TenantUploadForm
from reconciliation.models import ContractProposal, ImportFile
from reconciliation.tests.test_admin import staff

pytestmark = pytest.mark.django_db

# page -> (its form's fields besides the file, the file's field name, what the limit names)
PAGES = {
    "/admin/reconciliation/importfile/upload/": ({"kind": "orders"}, "file", b"the file has"),
    "/admin/reconciliation/contractproposal/upload/": ({}, "document", b"the document has"),
}


def _post(client: Client, page: str, data: bytes, **extra: object):  # type: ignore[no-untyped-def]
    fields, file_field, _ = PAGES[page]
    return client.post(page, {**fields, **extra, file_field: SimpleUploadedFile("upload.csv", data)})


def test_both_upload_forms_are_the_one_tenant_upload_form() -> None:
    assert issubclass(imports_admin.UploadForm, TenantUploadForm)
    assert issubclass(proposals_admin.DocumentForm, TenantUploadForm)


@override_settings(PAYPILOT_RECON_MAX_FILE_BYTES=100)
@pytest.mark.parametrize("page", sorted(PAGES))
def test_an_upload_over_the_limit_is_refused_on_both_pages(tenant, page: str) -> None:
    page_html = _post(staff(tenant), page, b"x" * 101)
    assert page_html.status_code == 200
    assert b"file_too_large" in page_html.content and PAGES[page][2] + b" 101 bytes" in page_html.content
    assert not ImportFile.objects.exists() and not ContractProposal.objects.exists()


@pytest.mark.parametrize("page", sorted(PAGES))
def test_a_platform_admin_must_choose_the_tenant_on_both_pages(tenant, page: str) -> None:
    admin_user = get_user_model().objects.create_superuser(username="root", password="x")
    client = Client()
    client.force_login(admin_user)
    form_page = client.get(page)
    assert list(form_page.context["form"].fields["tenant"].queryset) == [tenant]
    refused = _post(client, page, b"Order,Date\n")
    assert b"tenant_required" in refused.content
    assert not ImportFile.objects.exists() and not ContractProposal.objects.exists()
