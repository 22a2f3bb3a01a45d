"""Acceptance of issue 15: shadow replay shows exactly what a candidate changes, two people
activate it, /decide names it, a restore brings the earlier answers back, and the form refuses
a candidate that would retry a "do not try again" code."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from decisions import selectors, services
from decisions.models import DecisionRecord, RuleVersion
from decisions.rules import decide
from decisions.shadow import shadow_replay
from decisions.tests.rule_users import staff_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    selectors.rule_table_cache_clear()
    yield
    selectors.rule_table_cache_clear()


def _decide(client, invoice: str, code: str, **extra: object) -> dict:  # type: ignore[no-untyped-def,type-arg]
    response = client.post("/decide", data=json.dumps({"invoice_id": invoice, "failure_code": code, **extra}),
                           content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


def _seed(client, tenant) -> None:  # type: ignore[no-untyped-def]
    """Nine decisions in the window (five of them insufficient_funds), one outside it."""
    for i in range(3):
        _decide(client, f"in_if_{i}", "insufficient_funds")
    for i in range(2):
        _decide(client, f"in_ifh_{i}", "insufficient_funds", attempt=3)  # high risk: escalated wait
    _decide(client, "in_ce_0", "card_expired")
    _decide(client, "in_ce_1", "card_expired", attempt=2)
    _decide(client, "in_gd_0", "generic_decline")
    _decide(client, "in_mc_0", "issuer_do_not_retry", card_brand="mastercard", network_advice_code="03")
    old = decide(failure_code="insufficient_funds")
    services.decision_record(tenant=tenant, invoice_ref="in_old", decision=old, source="api",
                             decided_at=services.now_ms() - timedelta(days=40))


def _shorten_if(version: RuleVersion) -> None:
    version.rows.filter(failure_code="insufficient_funds").update(retry_in_days=1)


def test_shortened_wait_replay_activation_and_restore(tenant, other_tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    client = api_client_for(tenant, "integrator")
    _seed(client, tenant)
    _decide(api_client_for(other_tenant, "integrator"), "in_other", "insufficient_funds")
    before = _decide(client, "in_probe_0", "insufficient_funds")
    assert before["strategy"]["retry_in_days"] == 3 and before["rule_version_id"] is None
    alice, bob = staff_user(tenant=tenant, username="alice"), staff_user(tenant=tenant, username="bob")

    # v1: the built-in table as the tenant's own version, activated by two people.
    v1 = services.rule_version_create(tenant=tenant, user_id=alice.pk, note="baseline")
    services.rule_version_approve(version=v1, user=alice)
    assert services.rule_version_approve(version=v1, user=bob).activated
    # v2: insufficient_funds waits one day instead of three.
    v2 = services.rule_version_create(tenant=tenant, user_id=alice.pk, based_on=v1, note="payday")
    _shorten_if(v2)

    report = shadow_replay(tenant=tenant, candidate=selectors.rule_table_for_version(version=v2), days=30).as_dict()
    assert report["decisions"] == 10  # nine seeded + the probe; the 40-day-old and other tenant's are out
    assert report["changed"] == 6 and report["wait_shorter"] == 6
    assert report["retries_forbidden"] == report["retries_added"] == 0
    by_code = report["by_failure_code"]
    assert {code: s["changed"] for code, s in by_code.items()} == {
        "card_expired": 0, "generic_decline": 0, "insufficient_funds": 6, "issuer_do_not_retry": 0}
    steps = {(t["from"]["retry_in_days"], t["to"]["retry_in_days"]): t["decisions"]
             for t in by_code["insufficient_funds"]["transitions"]}
    assert steps == {(3, 1): 4, (2, 1): 2}  # normal wait 3 -> 1; escalated max(1, 3-1)=2 -> max(1, 1-1)=1
    stored = DecisionRecord.objects.filter(tenant=tenant, failure_code="insufficient_funds",
                                           decided_at__gte=services.now_ms() - timedelta(days=30))
    # /decide answers carry no amount and no currency: the money of the changed ones is under "unknown".
    assert report["money"]["by_currency"] == {"unknown": {
        "decisions": 6, "expected_recovered_minor": 0,
        "annual_value_at_risk_minor": sum(r.annual_value_at_risk_minor or 0 for r in stored)}}

    services.rule_version_approve(version=v2, user=alice)
    assert _decide(client, "in_probe_1", "insufficient_funds")["rule_version_id"] == v1.pk  # one approval: not yet
    assert services.rule_version_approve(version=v2, user=bob).activated
    v2.refresh_from_db()
    after = _decide(client, "in_probe_2", "insufficient_funds")
    assert after["strategy"]["retry_in_days"] == 1
    assert after["rule_version_id"] == v2.pk and after["rules_version"] == v2.digest
    row = DecisionRecord.objects.get(pk=after["audit_id"])
    assert row.rule_version_id == v2.pk and row.rules_version == v2.digest and row.retry_in_days == 1
    history = client.get("/decisions/in_probe_2").json()["decisions"][0]
    assert history["rule_version_id"] == v2.pk

    # Roll back: v1 again, by two fresh approvals; the answers are the earlier ones.
    services.rule_version_approve(version=v1, user=bob)
    assert services.rule_version_approve(version=v1, user=alice).activated
    restored = _decide(client, "in_probe_3", "insufficient_funds")
    assert restored["rule_version_id"] == v1.pk
    for key in ("strategy", "impact", "rule_fired", "churn_risk", "network_rules"):
        assert restored[key] == before[key]
    assert restored["schedule"]["source"] == before["schedule"]["source"]


def _table_digests() -> dict[str, str]:
    out = {}
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.table_names()):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            rows = sorted(repr(r) for r in cursor.fetchall())
            out[table] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
    return out


def test_replay_writes_nothing_anywhere(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    client = api_client_for(tenant, "integrator")
    _seed(client, tenant)
    version = services.rule_version_create(tenant=tenant, user_id=None)
    _shorten_if(version)
    before = _table_digests()
    assert "decisions_decisionrecord" in before and "django_q_ormq" in before
    out = io.StringIO()
    call_command("rules_shadow", "--tenant", tenant.slug, "--candidate", str(version.number), "--days", "30",
                 "--json", stdout=out)
    assert json.loads(out.getvalue())["changed"] == 5
    call_command("rules_shadow", "--tenant", tenant.slug, "--candidate", str(version.number), "--no-progress",
                 stdout=io.StringIO())
    assert _table_digests() == before


def test_command_text_output_and_errors(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    _seed(api_client_for(tenant, "integrator"), tenant)
    version = services.rule_version_create(tenant=tenant, user_id=None)
    _shorten_if(version)
    out = io.StringIO()
    call_command("rules_shadow", "--tenant", tenant.slug, "--candidate", str(version.number), "--no-progress",
                 stdout=out)
    text = out.getvalue()
    assert "9 decisions, 5 would change" in text and "wait_and_retry/3d/retry -> wait_and_retry/1d/retry" in text
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no rule version 99"):
        call_command("rules_shadow", "--tenant", tenant.slug, "--candidate", "99")
    with pytest.raises(CommandError, match="days must be"):
        call_command("rules_shadow", "--tenant", tenant.slug, "--candidate", "1", "--days", "0")


def _row_post(version: RuleVersion, **changes: dict[str, object]) -> dict[str, object]:
    rows = list(version.rows.order_by("pk"))
    data: dict[str, object] = {"note": version.note, "rows-TOTAL_FORMS": len(rows), "rows-INITIAL_FORMS": len(rows),
                               "rows-MIN_NUM_FORMS": 0, "rows-MAX_NUM_FORMS": 1000}
    for i, row in enumerate(rows):
        values = {"id": row.pk, "version": version.pk, "action": row.action, "retry_in_days": row.retry_in_days,
                  "max_attempts": "" if row.max_attempts is None else row.max_attempts, "offer": row.offer,
                  "escalate_at": row.escalate_at, **changes.get(row.failure_code, {})}
        data.update({f"rows-{i}-{k}": v for k, v in values.items()})
    return data


def test_form_refuses_retrying_a_do_not_try_again_code(tenant) -> None:  # type: ignore[no-untyped-def]
    editor = staff_user(tenant=tenant, username="editor")
    version = services.rule_version_create(tenant=tenant, user_id=editor.pk)
    browser = Client()
    browser.force_login(editor)
    url = f"/admin/decisions/ruleversion/{version.pk}/change/"
    assert browser.get(url).status_code == 200
    response = browser.post(url, _row_post(version, issuer_do_not_retry={"action": "wait_and_retry",
                                                                         "retry_in_days": 3}))
    assert response.status_code == 200  # the form again, with the error
    page = response.content.decode()
    assert "issuer_do_not_retry: is a no-retry code" in page and "no_retry_code_retries" in page
    row = version.rows.get(failure_code="issuer_do_not_retry")
    assert row.action == "request_new_payment_method" and row.retry_in_days == 0
    # Within the rails the same form saves, and the edit is audited.
    ok = browser.post(url, _row_post(version, insufficient_funds={"retry_in_days": 1}))
    assert ok.status_code == 302
    assert version.rows.get(failure_code="insufficient_funds").retry_in_days == 1
    from paypilot.models import AuditEvent

    assert AuditEvent.objects.filter(event="decisions.rules.version_edited", tenant=tenant).count() == 1


def test_admin_add_approve_action_and_shadow_page(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    _seed(api_client_for(tenant, "integrator"), tenant)
    alice, bob = staff_user(tenant=tenant, username="alice"), staff_user(tenant=tenant, username="bob")
    browser = Client()
    browser.force_login(alice)
    assert browser.post("/admin/decisions/ruleversion/add/", {"note": "payday"}).status_code == 302
    version = RuleVersion.objects.get(tenant=tenant)
    assert version.rows.count() == 8 and version.created_by_id == alice.pk
    _shorten_if(version)
    page = browser.get(f"/admin/decisions/ruleversion/{version.pk}/shadow/?days=30")
    assert page.status_code == 200 and b"would change" in page.content
    assert page.context["report"]["changed"] == 5
    assert browser.get(f"/admin/decisions/ruleversion/{version.pk}/shadow/?days=0").context["error"]
    action = {"action": "approve_versions", "_selected_action": [version.pk]}
    browser.post("/admin/decisions/ruleversion/", action)
    browser.post("/admin/decisions/ruleversion/", action)  # the same person again: refused
    version.refresh_from_db()
    assert version.status == RuleVersion.Status.PENDING
    second = Client()
    second.force_login(bob)
    second.post("/admin/decisions/ruleversion/", action)
    version.refresh_from_db()
    assert version.status == RuleVersion.Status.ACTIVE
    # Frozen: the change page is view-only now.
    assert b'name="rows-0-action"' not in browser.get(f"/admin/decisions/ruleversion/{version.pk}/change/").content


def test_other_tenants_version_is_404_in_the_admin(tenant, other_tenant) -> None:  # type: ignore[no-untyped-def]
    outsider = staff_user(tenant=other_tenant, username="outsider")
    version = services.rule_version_create(tenant=tenant, user_id=None)
    browser = Client()
    browser.force_login(outsider)
    assert browser.get(f"/admin/decisions/ruleversion/{version.pk}/shadow/").status_code == 404
    assert browser.get(f"/admin/decisions/ruleversion/{version.pk}/change/").status_code == 404
