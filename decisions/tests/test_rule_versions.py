"""Tenant rule versions: guard rails, four-eyes activation, restore, and decide() using them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from decisions import selectors, services, versions
from decisions.models import DecisionRecord, RuleVersion, RuleVersionApproval
from decisions.rules import BUILTIN_TABLE, RULES_VERSION, decide
from decisions.tables import TableRow
from decisions.tests.rule_users import EDIT, staff_user
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    # The active-table cache is per process and keyed by tenant id, which a later test may reuse.
    selectors.rule_table_cache_clear()
    yield
    selectors.rule_table_cache_clear()


def _set_row(version: RuleVersion, code: str, **values: object) -> None:
    version.rows.filter(failure_code=code).update(**values)


def test_new_version_copies_the_builtin_table(tenant) -> None:  # type: ignore[no-untyped-def]
    version = services.rule_version_create(tenant=tenant, user_id=None)
    table = selectors.rule_table_for_version(version=version)
    assert version.number == 1 and version.status == RuleVersion.Status.DRAFT
    assert dict(table.rows) == dict(BUILTIN_TABLE.rows)
    assert services.rule_version_create(tenant=tenant, user_id=None).number == 2
    assert AuditEvent.objects.filter(event="decisions.rules.version_created", tenant=tenant).count() == 2


@pytest.mark.parametrize(("code", "row", "reason"), [
    ("issuer_do_not_retry", TableRow("wait_and_retry", 3, "We retry."), versions.NO_RETRY_CODE_RETRIES),
    ("issuer_do_not_retry", TableRow("request_new_payment_method", 2, "x"), versions.NO_RETRY_CODE_RETRIES),
    ("retries_exhausted", TableRow("retry_and_verify", 0, "x"), versions.NO_RETRY_CODE_RETRIES),
    ("generic_decline", TableRow("request_manual_payment", 2, "x"), versions.NO_RETRY_ACTION_RETRIES),
    ("insufficient_funds", TableRow("wait_and_retry", 31, "x"), versions.WAIT_OUT_OF_RANGE),
    ("insufficient_funds", TableRow("wait_and_retry", 3, "x", max_attempts=0), versions.ATTEMPTS_OUT_OF_RANGE),
    ("insufficient_funds", TableRow("wait_and_retry", 3, "x", escalate_at="always"), versions.UNKNOWN_ESCALATION),
    ("insufficient_funds", TableRow("pay_twice", 3, "x"), versions.UNKNOWN_ACTION),
    ("insufficient_funds", TableRow("wait_and_retry", 3, "<b>hi</b>"), versions.OFFER_INVALID),
])
def test_guard_rails_refuse_and_name_the_rule(code: str, row: TableRow, reason: str) -> None:
    with pytest.raises(versions.GuardRailError) as caught:
        versions.row_check(failure_code=code, row=row)
    assert caught.value.reason == reason and code in str(caught.value)


def test_every_builtin_row_passes_the_guard_rails() -> None:
    for code, row in BUILTIN_TABLE.rows.items():
        versions.row_check(failure_code=code, row=row)


def test_builtin_table_decides_exactly_as_before() -> None:
    for code in (*versions.ROW_CODES, "something_else"):
        for attempt, prior in ((1, 0), (2, 1), (3, 3)):
            a = decide(failure_code=code, attempt=attempt, prior_failures=prior)
            b = decide(failure_code=code, attempt=attempt, prior_failures=prior, table=BUILTIN_TABLE)
            assert a.strategy == b.strategy and a.rules_version == RULES_VERSION and b.rule_version_id is None


def test_candidate_cannot_loosen_a_network_never_retry() -> None:
    # Even a table that retries a generic decline the next day cannot retry Mastercard MAC 03.
    rows = dict(BUILTIN_TABLE.rows, generic_decline=TableRow("retry_and_verify", 1, "We retry tomorrow."))
    table = versions.table_build(rows=rows.items(), version_id=None, version_number=None)
    plain = decide(failure_code="generic_decline", table=table)
    assert plain.schedule.retry_at is not None and plain.strategy.retry_in_days == 1
    mac03 = decide(failure_code="generic_decline", table=table, card_brand="mastercard", network_advice_code="03")
    assert mac03.schedule.retry_at is None and mac03.schedule.source == "network_rule"
    assert [c["rule_id"] for c in mac03.network_rules] == ["mc_mac_03_never"]


def test_max_attempts_and_escalation_of_a_version() -> None:
    rows = dict(BUILTIN_TABLE.rows, insufficient_funds=TableRow("wait_and_retry", 5, "Soon.", escalate_at="medium",
                                                                max_attempts=3))
    table = versions.table_build(rows=rows.items(), version_id=7, version_number=2)
    assert decide(failure_code="insufficient_funds", attempt=1, table=table).strategy.retry_in_days == 5
    medium = decide(failure_code="insufficient_funds", attempt=2, table=table)
    assert medium.churn_risk == "medium" and medium.strategy.escalated and medium.strategy.retry_in_days == 4
    last = decide(failure_code="insufficient_funds", attempt=3, table=table)
    assert last.schedule.retry_at is None and last.strategy.retry_in_days == 0
    assert last.rule_version_id == 7 and last.rules_version == table.digest != RULES_VERSION


def test_four_eyes_activation(tenant) -> None:  # type: ignore[no-untyped-def]
    alice = staff_user(tenant=tenant, username="alice")
    bob = staff_user(tenant=tenant, username="bob")
    version = services.rule_version_create(tenant=tenant, user_id=alice.pk)
    _set_row(version, "insufficient_funds", retry_in_days=1)
    first = services.rule_version_approve(version=version, user=alice)
    assert not first.activated and first.approvals == 1 and first.version.status == RuleVersion.Status.PENDING
    assert first.version.digest.startswith("t-")
    with pytest.raises(services.RuleVersionRefused) as same:
        services.rule_version_approve(version=version, user=alice)
    assert same.value.reason == services.RULES_ALREADY_APPROVED
    assert selectors.rule_table_active(tenant_id=tenant.pk) is BUILTIN_TABLE
    second = services.rule_version_approve(version=version, user=bob)
    assert second.activated and second.version.status == RuleVersion.Status.ACTIVE
    table = selectors.rule_table_active(tenant_id=tenant.pk)
    assert table.version_id == version.pk and table.rows["insufficient_funds"].retry_in_days == 1
    events = list(AuditEvent.objects.filter(tenant=tenant, event__startswith="decisions.rules.")
                  .order_by("pk").values_list("event", flat=True))
    assert events == ["decisions.rules.version_created", "decisions.rules.approved", "decisions.rules.approved",
                      "decisions.rules.activated"]
    activated = AuditEvent.objects.get(tenant=tenant, event="decisions.rules.activated")
    assert activated.detail["version"] == version.pk and activated.detail["rules_version"] == second.version.digest
    assert sorted(activated.detail["approvals"]) == sorted([alice.pk, bob.pk])
    with pytest.raises(services.RuleVersionRefused) as again:
        services.rule_version_approve(version=version, user=alice)
    assert again.value.reason == services.RULES_ALREADY_ACTIVE


def test_approval_needs_the_right_and_the_tenant(tenant, other_tenant) -> None:  # type: ignore[no-untyped-def]
    editor = staff_user(tenant=tenant, username="editor", codenames=EDIT)
    outsider = staff_user(tenant=other_tenant, username="outsider")
    version = services.rule_version_create(tenant=tenant, user_id=editor.pk)
    for user, reason in ((editor, services.RULES_NOT_PERMITTED), (outsider, services.RULES_WRONG_TENANT)):
        with pytest.raises(services.RuleVersionRefused) as refused:
            services.rule_version_approve(version=version, user=user)
        assert refused.value.reason == reason
    version.refresh_from_db()
    assert version.status == RuleVersion.Status.DRAFT and not RuleVersionApproval.objects.exists()


def test_a_draft_breaking_a_guard_rail_cannot_be_approved(tenant) -> None:  # type: ignore[no-untyped-def]
    alice = staff_user(tenant=tenant, username="alice")
    version = services.rule_version_create(tenant=tenant, user_id=alice.pk)
    # Written past the form (which would refuse it): the service checks again when freezing.
    _set_row(version, "issuer_do_not_retry", action="wait_and_retry", retry_in_days=2)
    with pytest.raises(services.RuleVersionRefused) as refused:
        services.rule_version_approve(version=version, user=alice)
    assert refused.value.reason == versions.NO_RETRY_CODE_RETRIES and "issuer_do_not_retry" in str(refused.value)
    version.refresh_from_db()
    assert version.status == RuleVersion.Status.DRAFT


def test_restore_needs_two_fresh_approvals(tenant) -> None:  # type: ignore[no-untyped-def]
    alice, bob = staff_user(tenant=tenant, username="alice"), staff_user(tenant=tenant, username="bob")
    v1 = services.rule_version_create(tenant=tenant, user_id=alice.pk)
    services.rule_version_approve(version=v1, user=alice)
    services.rule_version_approve(version=v1, user=bob)
    v2 = services.rule_version_create(tenant=tenant, user_id=alice.pk, based_on=v1)
    services.rule_version_approve(version=v2, user=alice)
    services.rule_version_approve(version=v2, user=bob)
    v1.refresh_from_db()
    assert v1.status == RuleVersion.Status.RETIRED
    # v1's approvals from its first activation do not count: the restore starts a new round.
    first = services.rule_version_approve(version=v1, user=alice)
    assert not first.activated and first.approvals == 1
    assert selectors.rule_table_active(tenant_id=tenant.pk).version_id == v2.pk
    assert services.rule_version_approve(version=v1, user=bob).activated
    assert selectors.rule_table_active(tenant_id=tenant.pk).version_id == v1.pk
    assert RuleVersion.objects.get(pk=v2.pk).status == RuleVersion.Status.RETIRED


def test_decision_row_names_the_version(tenant) -> None:  # type: ignore[no-untyped-def]
    version = services.rule_version_create(tenant=tenant, user_id=None)
    table = selectors.rule_table_for_version(version=version)
    decision = decide(failure_code="card_expired", table=table)
    record = services.decision_record(tenant=tenant, invoice_ref="in_v", decision=decision, source="api")
    stored = DecisionRecord.objects.get(pk=record.pk)
    assert stored.rule_version_id == version.pk and stored.rules_version == table.digest


def test_a_frozen_version_cannot_be_edited(tenant) -> None:  # type: ignore[no-untyped-def]
    alice = staff_user(tenant=tenant, username="alice")
    version = services.rule_version_create(tenant=tenant, user_id=alice.pk)
    services.rule_version_edited(version=version, user_id=alice.pk)  # a draft: fine
    services.rule_version_approve(version=version, user=alice)
    with pytest.raises(services.RuleVersionRefused) as refused:
        services.rule_version_edited(version=version, user_id=alice.pk)  # stale object, fresh check
    assert refused.value.reason == services.RULES_FROZEN


def test_admin_copy_action_makes_a_new_draft(tenant, client) -> None:  # type: ignore[no-untyped-def]
    alice = staff_user(tenant=tenant, username="alice")
    v1 = services.rule_version_create(tenant=tenant, user_id=alice.pk)
    _set_row(v1, "insufficient_funds", retry_in_days=5)
    client.force_login(alice)
    response = client.post("/admin/decisions/ruleversion/", {"action": "copy_to_draft",
                                                             "_selected_action": [v1.pk]})
    assert response.status_code == 302
    copy = RuleVersion.objects.get(tenant=tenant, number=2)
    assert copy.status == RuleVersion.Status.DRAFT and copy.note == "copy of v1"
    assert copy.rows.get(failure_code="insufficient_funds").retry_in_days == 5
