"""The payments-ops MCP tools at /mcp: a live server spoken to with the SDK's own
streamable HTTP client, authenticated with the tenant's bearer token."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.server.elicitation import ElicitationResult  # noqa: F401 (the callback's answer type below)
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult

from paypilot.models import ApiToken, AuditEvent
from paypilot.services import tenant_create, token_issue
from reconciliation.mcp_tools.server import TOOL_NAMES, WRITE_TOOL_NAMES
from reconciliation.models import Break, ContractVersion, ImportFile, Layout
from reconciliation.services.sample import sample_load, sample_workspace
from reconciliation.tests.mcp_helpers import http_client, tables_digest

EXPORTS = Path(__file__).resolve().parents[1] / "sample" / "exports"
PRICING = """# Northwind Payments pricing schedule (USD)

Standard pricing for card payments: 2.9% + $0.30 per successful card charge.

Disputes: a chargeback fee of $15.00 is charged for each dispute received.

Payouts: funds are paid out to your bank account on a 2-day rolling basis.
"""
PLANTED = ("duplicate_capture", "fee_mismatch", "payout_short", "payout_missing", "missing_capture",
           "capture_without_order", "amount_mismatch")


@pytest.fixture
def sample(committed_db):  # type: ignore[no-untyped-def]
    tenant, _ = sample_load(actor="test")
    return tenant


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _calls(url: str, token: str | None, calls: list[tuple[str, dict[str, Any]]], **client: Any) -> list[Any]:
    out: list[Any] = []
    async with http_client(url, token, **client) as c:
        for name, args in calls:
            try:
                out.append(await c.call_tool(name, args))
            except MCPError as exc:
                out.append(exc)
    return out


# The arguments each write tool requires: a valid call, so only the role can refuse it.
WRITE_ARGS = {"import_file": ("kind", "filename", "content"), "propose_contract_terms": ("filename", "content"),
              "save_column_mapping": ("kind", "filename", "content", "mapping"),
              "save_contract_terms": ("proposal_id", "effective_from")}


def _mcp_error(exc: BaseException) -> MCPError:
    """The MCPError the SDK raised, out of the task groups it may be wrapped in."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    assert isinstance(exc, MCPError), repr(exc)
    return exc


def _post(url: str, token: str | None, body: dict[str, Any]) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-06-18"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.post(f"{url}/mcp", json=body, headers=headers, timeout=60)


def test_sixteen_tools_listed_with_read_only_annotations_and_output_schemas(sample, live_server) -> None:
    token = token_issue(tenant=sample, role="viewer").plaintext

    async def go() -> Any:
        async with http_client(live_server.url, token) as c:
            return (await c.list_tools()).tools

    tools = {t.name: t for t in _run(go())}
    assert len(tools) == 16 and set(TOOL_NAMES) <= set(tools)
    assert {"lookup_return_code", "list_decisions", "explain"} <= set(tools)
    for name, tool in tools.items():
        assert tool.annotations.read_only_hint is (name not in WRITE_TOOL_NAMES), name
        assert tool.annotations.destructive_hint is False and tool.annotations.open_world_hint is False
        assert tool.output_schema and tool.output_schema["type"] == "object", name
    money = tools["reconcile"].output_schema["$defs"]["Money"]["properties"]
    assert set(money) == {"amount_minor", "currency", "display"}


# check_refund without as_of asks about today: a day after the sample's (2026-11-16), every time.
@pytest.mark.frozen_clock(datetime(2026, 12, 4, 9, tzinfo=UTC))
def test_the_whole_morning_names_every_planted_problem(sample, live_server) -> None:
    """"Run my payments ops review" on the sample tenant, as a client would play it."""
    token = token_issue(tenant=sample, role="viewer").plaintext

    async def morning() -> dict[str, Any]:
        async with http_client(live_server.url, token) as c:
            review = (await c.call_tool("reconcile", {})).structured_content
            explained = [(await c.call_tool("explain_break", {"break_id": b["break_id"]})).structured_content
                         for b in review["breaks"]]
            disputes = (await c.call_tool("list_disputes", {})).structured_content
            triage = [(await c.call_tool("triage_dispute", {"dispute_id": d["dispute_id"]})).structured_content
                      for d in review["disputes_due"]]
            packs = [await c.call_tool("draft_evidence_pack", {"dispute_id": d["dispute_id"]})
                     for d in review["disputes_due"]]
            refund = (await c.call_tool("check_refund", {"charge_id": "ch_3Nw1003b", "amount_minor": 6500,
                                                         "currency": "USD"})).structured_content
            return {"review": review, "explained": explained, "disputes": disputes, "triage": triage,
                    "packs": packs, "refund": refund}

    played = _run(morning())
    review = played["review"]
    assert review["tenant"] == "sample" and review["as_of"] == sample_workspace()["as_of"]
    assert review["source"] == "stored_run" and review["executes_anything"] is False
    # Every planted problem is named: in the breaks, and in the to-do list with its approver.
    assert sorted(b["kind"] for b in review["breaks"]) == sorted(PLANTED)
    assert sorted(t["kind"] for t in review["todo"]) == sorted([*PLANTED, "dispute_due"])
    assert review["match_rate"] == 0.8333 and review["orders"] == 18
    assert review["money_in_breaks"] == [{"amount_minor": 26361, "currency": "USD", "display": "263.61 USD"}]
    assert len(review["biggest_breaks"]) == 5 and all(b["explanation"] for b in review["biggest_breaks"])
    short = next(b for b in review["breaks"] if b["kind"] == "payout_short")
    assert short["amount"] == {"amount_minor": -1250, "currency": "USD", "display": "-12.50 USD"}
    assert all(b["approver"] in ("finance approver", "controller") for b in review["breaks"])
    assert all(t["approver"] for t in review["todo"])
    assert {t["kind"] for t in review["todo"] if t["only_a_person_can_approve"]} >= {"duplicate_capture",
                                                                                     "dispute_due"}
    # The duplicate capture and the duplicate dispute are one story.
    (due,) = review["disputes_due"]
    assert due["dispute_id"] == "dp_1Nw0001" and due["days_left"] == 2 and due["requires_human_decision"] is True
    assert due["family"] == "duplicate" and due["same_story"]
    dup_todo = next(t for t in review["todo"] if t["kind"] == "duplicate_capture")
    assert dup_todo["linked_dispute"] == "dp_1Nw0001" and "Do not refund" in dup_todo["action"]
    for explained in played["explained"]:
        assert explained["next_step"]["approver"] and explained["next_step"]["requires_human_decision"]
    fee = next(e for e in played["explained"] if e["break"]["kind"] == "fee_mismatch")
    assert fee["contract"]["label"] == "USD v1 from 2026-10-01" and fee["rows"]["provider"]
    dup = next(e for e in played["explained"] if e["break"]["kind"] == "duplicate_capture")
    assert [d["dispute_id"] for d in dup["rows"]["disputes"]] == ["dp_1Nw0001"]
    assert [d["dispute_id"] for d in played["disputes"]["disputes"]] == ["dp_1Nw0001"]
    (triage,) = played["triage"]
    assert triage["requires_human_decision"] is True and triage["win_likelihood"]["reasons"]
    assert triage["recommendation"]["approver"]
    # Refunding the disputed duplicate would pay the customer twice: refused, and nothing executes.
    refund = played["refund"]
    assert refund["safe"] is False and refund["recommendation"]["action"] == "do_not_refund"
    assert refund["recommendation"]["executes_refund"] is False and refund["recommendation"]["approver"]
    (pack,) = played["packs"]
    assert not pack.is_error and "dp_1Nw0001" in pack.structured_content["markdown"]


def test_no_token_or_a_bad_token_is_401_with_www_authenticate_and_a_json_rpc_error(sample, live_server) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    missing = _post(live_server.url, None, body)
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"] == 'Bearer realm="paypilot"'
    assert missing.json()["id"] == 1 and missing.json()["error"]["code"] == -32001
    bad = _post(live_server.url, "pp_0123456789_nope", body)
    assert bad.status_code == 401
    assert bad.headers["WWW-Authenticate"] == 'Bearer realm="paypilot", error="invalid_token"'
    assert bad.json()["error"]["data"]["error"] == "unauthorized"
    # The SDK's own client raises an MCPError carrying our message, not an opaque -32603.
    for token in (None, "pp_0123456789_nope"):
        with pytest.raises(BaseException) as raised:  # the initialize handshake is refused
            _run(_calls(live_server.url, token, [("list_disputes", {})]))
        error = _mcp_error(raised.value)
        assert error.error.code == -32001
        assert error.error.message == "unauthorized: a valid bearer token is required"


@pytest.mark.parametrize("role", ["viewer", "approver", "integrator"])
def test_a_write_by_a_lesser_role_is_a_tool_error_the_session_survives_and_it_is_audited(sample, live_server,
                                                                                         role) -> None:
    issued = token_issue(tenant=sample, role=role)
    before = tables_digest(skip=("paypilot_apitoken", "paypilot_auditevent"))
    args = {"kind": "orders", "filename": "x.csv", "content": "a\n1\n", "mapping": {}, "proposal_id": 1,
            "effective_from": "2026-10-01"}
    calls = [(name, {k: v for k, v in args.items() if k in WRITE_ARGS[name]}) for name in sorted(WRITE_TOOL_NAMES)]
    calls.append(("list_loaded", {}))
    results = _run(_calls(live_server.url, issued.plaintext, calls))
    for (name, _), result in zip(calls[:-1], results[:-1], strict=True):
        assert result.is_error, name
        body = result.structured_content
        assert body["error"] == "forbidden_role" and body["required_role"] == "tenant_admin", name
        assert json.loads(result.content[0].text) == body  # readable as text by any client
    assert not results[-1].is_error  # the same session goes on reading
    assert tables_digest(skip=("paypilot_apitoken", "paypilot_auditevent")) == before
    refusals = AuditEvent.objects.filter(event="paypilot.auth.rejected", tenant=sample,
                                         detail__reason="forbidden_role")
    assert refusals.count() == len(WRITE_TOOL_NAMES)
    assert {e.actor for e in refusals} == {f"token:{issued.token.prefix}"}


def test_bad_arguments_are_product_shaped_tool_errors_naming_the_argument(sample, live_server) -> None:
    token = token_issue(tenant=sample, role="viewer").plaintext
    negative, missing, path = _run(_calls(live_server.url, token, [
        ("check_refund", {"amount_minor": -5, "currency": "USD", "charge_id": "ch_1"}),
        ("check_refund", {"amount_minor": 500, "charge_id": "ch_1"}),
        ("preview_file", {"kind": "orders", "filename": "passwd", "path": "/etc/passwd"}),
    ]))
    assert negative.is_error and negative.structured_content["error"] == "invalid_argument"
    assert negative.structured_content["argument"] == "amount_minor"
    assert negative.structured_content["detail"] == "amount_minor: Input should be greater than 0"
    assert "pydantic" not in negative.content[0].text and "-5" not in negative.content[0].text
    assert missing.structured_content["argument"] == "currency"
    assert missing.structured_content["detail"] == "currency: Field required"
    # Over HTTP no path is ever read, whatever the file root says.
    assert path.is_error and path.structured_content["error"] == "path_not_allowed_over_http"


def test_read_only_tools_change_nothing(sample, live_server) -> None:
    token = token_issue(tenant=sample, role="tenant_admin").plaintext
    orders = (EXPORTS / "shop_orders.csv").read_text()
    # One call first, so the token's last-use stamp (auth bookkeeping, once a minute) is set.
    _run(_calls(live_server.url, token, [("list_loaded", {})]))
    before = tables_digest()
    break_id = Break.objects.filter(tenant=sample).order_by("position")[0].pk
    results = _run(_calls(live_server.url, token, [
        ("reconcile", {}), ("reconcile", {"as_of": "2026-11-20"}), ("explain_break", {"break_id": break_id}),
        ("explain_break", {"as_of": "2026-11-20", "position": 0}), ("list_disputes", {}),
        ("triage_dispute", {"dispute_id": "dp_1Nw0001"}), ("draft_evidence_pack", {"dispute_id": "dp_1Nw0001"}),
        ("check_refund", {"order_id": "NW-1003", "amount_minor": 6500, "currency": "USD"}),
        ("preview_file", {"kind": "orders", "filename": "shop_orders.csv", "content": orders}),
        ("list_contract_versions", {}), ("list_loaded", {}),
        ("lookup_return_code", {"code": "R01"}),
    ]))
    assert tables_digest() == before
    assert [r.is_error for r in results[:7]] == [False] * 7
    # The sample tenant confirmed this shop header for its other orders file (issue 31).
    assert results[8].structured_content["recognised_as"] == "layout"
    computed = results[1].structured_content
    assert computed["source"] == "computed" and computed["breaks"][0]["break_id"] is None
    assert computed["run"]["stored"] is False


def test_another_tenants_data_is_never_reachable(sample, live_server) -> None:
    other = tenant_create(slug="globex", name="Globex")
    token = token_issue(tenant=other, role="tenant_admin").plaintext
    break_id = Break.objects.filter(tenant=sample)[0].pk
    results = _run(_calls(live_server.url, token, [
        ("explain_break", {"break_id": break_id}), ("triage_dispute", {"dispute_id": "dp_1Nw0001"}),
        ("list_disputes", {}), ("reconcile", {}), ("list_loaded", {})]))
    assert results[0].is_error and results[0].structured_content["error"] == "not_found"
    assert results[1].is_error and results[1].structured_content["error"] == "not_found"
    assert results[2].structured_content["disputes"] == []
    assert results[3].structured_content["tenant"] == "globex" and results[3].structured_content["breaks"] == []
    assert results[4].structured_content["files"] == []


def test_onboarding_through_mcp_reproduces_the_sample(sample, live_server) -> None:
    """An empty tenant set up only through the tools (contract from a pricing document,
    layouts agreed once, four exports) gives the sample's review."""
    fresh = tenant_create(slug="fresh", name="Fresh")
    issued = token_issue(tenant=fresh, role="tenant_admin")

    async def onboard() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with http_client(live_server.url, issued.plaintext) as c:
            proposal = (await c.call_tool("propose_contract_terms", {"filename": "pricing.md", "content": PRICING}))
            out["proposal"] = proposal.structured_content
            pid = proposal.structured_content["proposal"]["id"]
            asked = await c.call_tool("save_contract_terms", {"proposal_id": pid, "effective_from": "2026-10-01"})
            out["asked"] = asked.structured_content
            expected = asked.structured_content["expected_confirm"]
            wrong = dict(expected, chargeback_fee="10.00")
            out["wrong"] = (await c.call_tool("save_contract_terms", {
                "proposal_id": pid, "effective_from": "2026-10-01", "confirm": wrong})).structured_content
            out["saved"] = (await c.call_tool("save_contract_terms", {
                "proposal_id": pid, "effective_from": "2026-10-01", "confirm": expected})).structured_content
            for kind, name in (("orders", "shop_orders.csv"), ("disputes", "disputes.csv")):
                text = (EXPORTS / name).read_text()
                preview = await c.call_tool("preview_file", {"kind": kind, "filename": name, "content": text})
                out[f"preview_{kind}"] = preview.structured_content
                mapping = json.loads((EXPORTS / f"{kind}.mapping.json").read_text())
                out[f"layout_{kind}"] = (await c.call_tool("save_column_mapping", {
                    "kind": kind, "mapping": mapping, "filename": name, "content": text})).structured_content
                out[f"import_{kind}"] = (await c.call_tool("import_file", {
                    "kind": kind, "filename": name, "content": text})).structured_content
            for kind, name in (("provider", "stripe_payout_reconciliation.csv"),
                               ("bank", "bank_statement.camt053.xml")):
                raw = base64.b64encode((EXPORTS / name).read_bytes()).decode()
                preview = await c.call_tool("preview_file", {"kind": kind, "filename": name, "content_base64": raw})
                out[f"preview_{kind}"] = preview.structured_content
                out[f"import_{kind}"] = (await c.call_tool("import_file", {
                    "kind": kind, "filename": name, "content_base64": raw})).structured_content
            again = await c.call_tool("import_file", {"kind": "orders", "filename": "again.csv",
                                                      "content": (EXPORTS / "shop_orders.csv").read_text()})
            out["again"] = again.structured_content
            out["review"] = (await c.call_tool("reconcile", {"as_of": sample_workspace()["as_of"]})).structured_content
            out["versions"] = (await c.call_tool("list_contract_versions", {})).structured_content
        return out

    out = _run(onboard())
    assert out["proposal"]["proposal"]["confirmable"] is True
    assert out["asked"]["error"] == "not_confirmed"
    assert out["asked"]["expected_confirm"] == {"currency": "USD", "effective_from": "2026-10-01",
                                                "percentage_fee": "2.9", "fixed_fee": "0.30",
                                                "chargeback_fee": "15.00", "payout_delay": "2"}
    assert out["wrong"]["error"] == "not_confirmed"
    assert out["saved"]["saved"] is True and out["saved"]["consent"] == "confirm_argument"
    assert out["preview_orders"]["recognised_as"] == "new_layout" and out["preview_orders"]["preview"]
    assert out["preview_provider"]["recognised_as"] == "stripe_report"
    assert out["preview_bank"]["recognised_as"] == "camt053"
    assert out["again"]["error"] == "refused" and out["again"]["reason"] == "duplicate_file"
    assert ImportFile.objects.filter(tenant=fresh).count() == 4 and Layout.objects.filter(tenant=fresh).count() == 2
    (version,) = ContractVersion.objects.filter(tenant=fresh)
    assert (version.percent_micro, version.fixed_minor, version.chargeback_fee_minor, version.payout_delay_days) == (
        29000, 30, 1500, 2)
    assert out["versions"]["versions"][0]["chargeback_fee"]["display"] == "15.00 USD"
    review = out["review"]
    assert review["source"] == "computed"
    assert sorted(t["kind"] for t in review["todo"]) == sorted([*PLANTED, "dispute_due"])
    assert review["money_in_breaks"][0]["amount_minor"] == 26361
    # Every write is audited with the token; the contract save names the proposal too.
    actor = f"token:{issued.token.prefix}"
    saved = AuditEvent.objects.get(event="reconciliation.mcp.contract_saved", tenant=fresh)
    assert saved.actor == actor and saved.detail["recon_proposal"] == out["proposal"]["proposal"]["id"]
    assert saved.detail["token_prefix"] == issued.token.prefix and saved.detail["action"] == "confirm_argument"
    assert AuditEvent.objects.filter(event="reconciliation.file.imported", tenant=fresh, actor=actor).count() == 4
    assert AuditEvent.objects.filter(event="reconciliation.layout.confirmed", tenant=fresh, actor=actor).count() == 2
    assert not ApiToken.objects.filter(tenant=sample).exists()


def test_save_contract_terms_asks_through_elicitation_when_the_client_can(committed_db, live_server) -> None:
    tenant = tenant_create(slug="asker", name="Asker")
    token = token_issue(tenant=tenant, role="tenant_admin").plaintext
    asked: list[str] = []

    def answer(save: bool) -> Any:
        async def callback(context: Any, params: Any) -> ElicitResult:
            asked.append(params.message)
            return ElicitResult(action="accept", content={"save": save})

        return callback

    async def go() -> tuple[Any, Any]:
        async with http_client(live_server.url, token) as c:
            pid = (await c.call_tool("propose_contract_terms", {"filename": "p.md", "content": PRICING})
                   ).structured_content["proposal"]["id"]
        async with http_client(live_server.url, token, elicitation_callback=answer(False)) as c:
            no = await c.call_tool("save_contract_terms", {"proposal_id": pid, "effective_from": "2026-10-01"})
        async with http_client(live_server.url, token, elicitation_callback=answer(True)) as c:
            yes = await c.call_tool("save_contract_terms", {"proposal_id": pid, "effective_from": "2026-10-01"})
        return no, yes

    no, yes = _run(go())
    assert no.is_error and no.structured_content["error"] == "not_confirmed"
    assert not yes.is_error and yes.structured_content["consent"] == "elicitation"
    assert len(asked) == 2 and "15.00" in asked[0] and "$15.00" in asked[0]
    assert ContractVersion.objects.filter(tenant=tenant).count() == 1
