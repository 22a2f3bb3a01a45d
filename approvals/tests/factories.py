"""factory-boy factories for approvals tests: finance users, invoices with drafts, approvals."""

from __future__ import annotations

from importlib import import_module

import factory
from django.contrib.auth.models import Group, Permission, User

from approvals.models import AdminMembership
from decisions.tests.factories import DecisionRecordFactory
from dunning.models import Draft
from ledger.tests.factories import CustomerFactory, InvoiceFactory
from paypilot.tests.factories import TenantFactory

FINANCE_GROUP = "Finance approvers"
PASSWORD = "correct-horse-battery-staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"finance{n}")
    is_staff = True
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def save_password(obj, create, extracted, **kwargs):  # type: ignore[no-untyped-def]
        if create:
            obj.save()


def finance_group() -> Group:
    """The "Finance approvers" group as its data migration makes it. A transactional test's
    flush empties the rows migrations wrote, so tests that run after one put it back."""
    migration = import_module("approvals.migrations.0003_finance_approvers_group")
    group, _ = Group.objects.get_or_create(name=migration.GROUP)
    for app_label, codename in migration.PERMISSIONS:
        group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return group


def finance_user(*, tenant, username: str | None = None) -> User:  # type: ignore[no-untyped-def]
    """A staff user in the "Finance approvers" group, member of `tenant`."""
    user = UserFactory(username=username) if username else UserFactory()
    user.groups.add(finance_group())
    AdminMembership.objects.create(user=user, tenant=tenant)
    return User.objects.get(pk=user.pk)  # fresh: no cached permissions


class DraftFactory(factory.django.DjangoModelFactory):
    """A stored draft for a treatment invoice of a customer with an email, and its decision."""

    class Meta:
        model = Draft

    tenant = factory.SubFactory(TenantFactory)
    invoice = factory.LazyAttribute(
        lambda o: InvoiceFactory(tenant=o.tenant, customer=CustomerFactory(tenant=o.tenant))
    )
    decision = factory.SubFactory(
        DecisionRecordFactory,
        tenant=factory.SelfAttribute("..tenant"),
        invoice_ref=factory.LazyAttribute(
            lambda o: o.factory_parent.invoice.external_invoice_id if o.factory_parent.invoice else "none"
        ),
    )
    subject = "Your payment did not go through"
    body = "Hello,\n\nyour last payment failed because the card on file has expired.\n\nThanks,\nAcme"
    locale = "en"
    source = "template"
    fallback_used = False
    guard_verdict = factory.LazyFunction(lambda: {"ok": True, "reasons": []})
