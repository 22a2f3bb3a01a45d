"""Card-network retry rules: loaded from data with a source each, applied to every decision,
cited in the answer, the audit row and the history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decisions import network, rules
from decisions.models import DecisionRecord

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def test_every_rule_names_its_source_and_how_sure_it_is():
    assert len(network.NETWORK_RULES) >= 12
    for rule in network.NETWORK_RULES:
        assert rule.source and rule.source_url.startswith("https://") and rule.confidence in {"high", "medium"}
    assert {"visa", "mastercard"} == {rule.network for rule in network.NETWORK_RULES}


def test_a_broken_table_refuses_to_load(tmp_path: Path):
    text = network.DATA.read_text().replace(",min_wait,1,,,", ",min_wait,,,,", 1)
    bad = tmp_path / "rules.csv"
    bad.write_text(text)
    with pytest.raises(network.NetworkTableError, match="wait_hours"):
        network._load(bad)


@pytest.mark.parametrize(("brand", "advice", "decline", "attempt", "rule_id", "retry"), [
    ("mastercard", "03", None, 1, "mc_mac_03_never", False),
    ("MasterCard", "21", None, 1, "mc_mac_21_cancelled", False),
    ("mastercard", "01", None, 1, "mc_mac_01_update", False),
    ("visa", None, "46", 1, "visa_cat1_never", False),
    ("visa", None, "R1", 1, "visa_cat1_never", False),
    ("visa", None, "05", 16, "visa_cat2_4_limit", False),
    ("mastercard", None, None, 36, "mc_tpe_30d_limit", False),
    ("mastercard", "30", None, 1, "mc_mac_30_10d", True),
])
def test_a_network_rule_shapes_the_decision_and_is_cited(brand, advice, decline, attempt, rule_id, retry):
    decision = rules.decide(failure_code="insufficient_funds", attempt=attempt, card_brand=brand,
                            network_advice_code=advice, network_decline_code=decline, now=NOW)
    assert [c["rule_id"] for c in decision.network_rules] == [rule_id]
    assert decision.network_rules[0]["source"] and decision.network_rules[0]["source_url"].startswith("https://")
    assert (decision.schedule.retry_at is not None) is retry
    if not retry:
        assert decision.schedule.source == "network_rule"
        assert decision.strategy.action in {"request_new_payment_method", "request_card_update"}


def test_a_retry_after_code_moves_the_retry_no_sooner_than_allowed():
    plain = rules.decide(failure_code="insufficient_funds", now=NOW)
    ten_days = rules.decide(failure_code="insufficient_funds", card_brand="mastercard", network_advice_code="30",
                            now=NOW)
    assert plain.schedule.retry_at < NOW + timedelta(days=10)
    assert ten_days.schedule.retry_at == NOW + timedelta(days=10)
    assert ten_days.strategy.retry_in_days == 10
    one_hour = rules.decide(failure_code="insufficient_funds", card_brand="mastercard", network_advice_code="24",
                            now=NOW)
    # Already later than the network asks: the schedule stands, and the rule it respects is cited.
    assert one_hour.schedule == plain.schedule
    assert [c["rule_id"] for c in one_hour.network_rules] == ["mc_mac_24_1h"]


def test_the_limits_allow_up_to_the_last_permitted_attempt():
    assert rules.decide(failure_code="insufficient_funds", attempt=15, card_brand="visa", now=NOW).schedule.retry_at
    assert rules.decide(failure_code="insufficient_funds", attempt=16, card_brand="visa", now=NOW).schedule.retry_at \
        is None


def test_advice_codes_are_mastercards_only():
    other = rules.decide(failure_code="insufficient_funds", card_brand="amex", network_advice_code="03", now=NOW)
    assert other.network_rules == () and other.schedule.retry_at is not None


def test_the_network_table_is_part_of_the_rules_version(monkeypatch):
    before = rules._digest()
    changed = (network.NETWORK_RULES[0].__class__(**{**network.NETWORK_RULES[0].__dict__, "wait_hours": None,
                                                       "summary": "changed"}),) + network.NETWORK_RULES[1:]
    monkeypatch.setattr(rules, "NETWORK_RULES", changed)
    assert rules._digest() != before


@settings(max_examples=300, deadline=None)
@given(
    code=st.sampled_from([*rules.FAILURE_CODES, "unlisted_code"]),
    brand=st.sampled_from([None, "visa", "mastercard", "amex"]),
    advice=st.sampled_from([None, "01", "02", "03", "21", "24", "25", "26", "27", "28", "29", "30", "99"]),
    decline=st.sampled_from([None, "05", "51", "04", "46", "R0", "R3", "14"]),
    attempt=st.integers(1, 50),
)
def test_no_decision_proposes_a_retry_a_network_rule_forbids(code, brand, advice, decline, attempt):
    decision = rules.decide(failure_code=code, attempt=attempt, card_brand=brand, network_advice_code=advice,
                            network_decline_code=decline, now=NOW)
    verdict = network.network_verdict(card_brand=brand, network_advice_code=advice, network_decline_code=decline,
                                      attempt=attempt)
    if verdict.forbids_retry:
        assert decision.schedule.retry_at is None
    elif verdict.min_wait and decision.schedule.retry_at is not None:
        assert decision.schedule.retry_at >= NOW + verdict.min_wait


@pytest.mark.django_db
def test_decide_api_takes_the_network_answer_and_cites_the_rule_in_the_audit_row(api_client_for, tenant):
    client = api_client_for(tenant)
    response = client.post("/decide", {"invoice_id": "in_mc_1", "failure_code": "insufficient_funds",
                                       "card_brand": "mastercard", "network_advice_code": "03"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["schedule"]["retry_at"] is None and body["schedule"]["source"] == "network_rule"
    assert body["input"]["card_brand"] == "mastercard" and body["input"]["network_advice_code"] == "03"
    assert [c["rule_id"] for c in body["network_rules"]] == ["mc_mac_03_never"]
    record = DecisionRecord.objects.get(pk=body["audit_id"])
    assert record.network_rules[0]["rule_id"] == "mc_mac_03_never" and record.network_advice_code == "03"
    history = client.get("/decisions/in_mc_1").json()["decisions"][0]
    assert history["network_rules"] == body["network_rules"] and history["input"] == body["input"]


@pytest.mark.django_db
@pytest.mark.parametrize(("field", "value"), [("network_advice_code", "03;drop"), ("card_brand", 7),
                                              ("network_decline_code", "12345")])
def test_decide_api_refuses_a_malformed_network_field(api_client_for, tenant, field, value):
    response = api_client_for(tenant).post("/decide", {"invoice_id": "in_x", "failure_code": "generic_decline",
                                                       field: value}, format="json")
    assert response.status_code == 422 and response.json()["field"] == field


def test_the_network_rules_table_in_the_docs_is_current():
    from django.conf import settings

    from decisions.render import with_network_block

    doc = (Path(settings.BASE_DIR) / "docs" / "decisions.md").read_text(encoding="utf-8")
    assert doc == with_network_block(doc), "run manage.py render_network_rules"
    for rule in network.NETWORK_RULES:
        assert f"`{rule.rule_id}`" in doc and rule.source_url in doc
