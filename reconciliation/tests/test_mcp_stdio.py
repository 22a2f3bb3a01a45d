"""`manage.py mcp_server --tenant T` as a subprocess, spoken to with the SDK's stdio client.

The subprocess needs a database it can see: on PostgreSQL the test database itself
(committed rows); on SQLite, whose test database lives in this process's memory, a
database file of its own, migrated and loaded with the sample by subprocesses."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from mcp import Client
from mcp_types import ElicitResult

from reconciliation.services.sample import FORMAT_FILES
from reconciliation.tests.mcp_helpers import MANAGE, stdio_params
from reconciliation.tests.test_mcp_http import PLANTED, PRICING

LOAD_SAMPLE = ("import django; django.setup(); from reconciliation.services.sample import sample_load; "
               "from paypilot.services import tenant_create; sample_load(actor='test'); "
               "tenant_create(slug='empty', name='Empty')")


@pytest.fixture
def database_url(committed_db: None, tmp_path: Path) -> str:
    if connection.vendor == "postgresql":
        from paypilot.services import tenant_create
        from reconciliation.services.sample import sample_load

        sample_load(actor="test")
        tenant_create(slug="empty", name="Empty")
        db = connection.settings_dict
        return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    url = f"sqlite:///{tmp_path / 'mcp.sqlite3'}"
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "paypilot.settings",
           "PAYPILOT_LOG_LEVEL": "WARNING"}
    subprocess.run([sys.executable, str(MANAGE), "migrate", "-v0"], env=env, check=True, cwd=MANAGE.parent)
    subprocess.run([sys.executable, "-c", LOAD_SAMPLE], env=env, check=True, cwd=MANAGE.parent)
    return url


def _client(url: str, *args: str, file_root: Path | None = None, **kwargs: Any) -> Client:
    params = stdio_params(*args)
    params.env = {**(params.env or {}), "DATABASE_URL": url}
    if file_root is not None:
        params.env["PAYPILOT_MCP_FILE_ROOT"] = str(file_root)
    return Client(params, read_timeout_seconds=60, **kwargs)


def test_stdio_serves_the_tenants_review_and_refuses_writes_for_a_viewer(database_url: str) -> None:
    async def go() -> dict[str, Any]:
        async with _client(database_url, "--tenant", "sample") as c:
            tools = (await c.list_tools()).tools
            review = await c.call_tool("reconcile", {})
            write = await c.call_tool("import_file", {"kind": "orders", "filename": "x.csv", "content": "a\n1\n"})
            propose = await c.call_tool("propose_contract_terms", {"filename": "p.md", "content": PRICING})
            loaded = await c.call_tool("list_loaded", {})
        return {"tools": tools, "review": review, "write": write, "propose": propose, "loaded": loaded}

    out = asyncio.run(go())
    assert len(out["tools"]) == 16
    review = out["review"].structured_content
    assert review["tenant"] == "sample" and sorted(b["kind"] for b in review["breaks"]) == sorted(PLANTED)
    assert review["disputes_due"][0]["dispute_id"] == "dp_1Nw0001"
    for refused in (out["write"], out["propose"]):
        assert refused.is_error
        body = refused.structured_content
        assert body["error"] == "forbidden_role" and body["required_role"] == "tenant_admin"
        assert "viewer may only read" in body["detail"]
    # The workspace's four kinds and one file of each other format (issue 31): nothing was imported.
    assert len(out["loaded"].structured_content["files"]) == 4 + len(FORMAT_FILES)


def test_stdio_tenant_admin_onboards_with_elicitation_and_paths(database_url: str, tmp_path: Path) -> None:
    exports = Path(__file__).resolve().parents[1] / "sample" / "exports"
    pricing = tmp_path / "pricing.md"
    pricing.write_text(PRICING)
    (tmp_path / "stripe.csv").write_bytes((exports / "stripe_payout_reconciliation.csv").read_bytes())
    asked: list[str] = []

    async def yes(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"save": True})

    async def go() -> dict[str, Any]:
        async with _client(database_url, "--tenant", "empty", "--role", "tenant_admin", file_root=tmp_path,
                           elicitation_callback=yes) as c:
            proposal = (await c.call_tool("propose_contract_terms", {"filename": "pricing.md", "path": str(pricing)}))
            pid = proposal.structured_content["proposal"]["id"]
            saved = await c.call_tool("save_contract_terms", {"proposal_id": pid, "effective_from": "2026-10-01"})
            imported = await c.call_tool("import_file", {"kind": "provider", "filename": "stripe.csv",
                                                         "path": "stripe.csv"})
            versions = await c.call_tool("list_contract_versions", {})
        return {"saved": saved, "imported": imported, "versions": versions}

    out = asyncio.run(go())
    assert not out["saved"].is_error, out["saved"].structured_content
    assert out["saved"].structured_content["consent"] == "elicitation"
    assert out["saved"].structured_content["audit_actor"] == "mcp-stdio:tenant_admin"
    assert asked and "proposal" in asked[0]
    assert out["imported"].structured_content["rows"] > 0
    (version,) = out["versions"].structured_content["versions"]
    assert version["chargeback_fee"] == {"amount_minor": 1500, "currency": "USD", "display": "15.00 USD"}


def test_unknown_tenant_stops_the_command(database_url: str) -> None:
    env = {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "paypilot.settings"}
    done = subprocess.run([sys.executable, str(MANAGE), "mcp_server", "--tenant", "nobody"], env=env,
                          capture_output=True, text=True, cwd=MANAGE.parent, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode != 0 and "no tenant 'nobody'" in done.stderr


def test_stdio_reads_paths_only_inside_the_file_root(database_url: str, tmp_path: Path) -> None:
    root = tmp_path / "imports"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "orders.csv").write_text("order_id,amount\nA-1,10.00\n")
    secret = tmp_path / "accounts.csv"  # beside the root, readable by the server process
    secret.write_text("user,password\nroot,x\n")
    (root / "link.csv").symlink_to(secret)
    preview = {"kind": "orders", "filename": "f.csv"}
    paths = ["/etc/passwd", str(secret), "../accounts.csv", "sub/../../accounts.csv", "link.csv",
             str(root / "link.csv")]

    async def go(file_root: Path | None, asked: list[str]) -> list[Any]:
        async with _client(database_url, "--tenant", "sample", "--role", "tenant_admin", file_root=file_root) as c:
            out = [await c.call_tool("preview_file", {**preview, "path": p}) for p in asked]
            out.append(await c.call_tool("import_file", {**preview, "path": "/etc/passwd"}))
            return out

    results = asyncio.run(go(root, [*paths, "sub/orders.csv", "sub/../sub/orders.csv"]))
    refused, inside, imported = results[:len(paths)], results[len(paths):-1], results[-1]
    for path, result in zip(paths, refused, strict=True):
        assert result.is_error and result.structured_content["error"] == "path_outside_root", path
        assert result.structured_content["argument"] == "path"
        assert "root:x" not in result.content[0].text
    assert imported.structured_content["error"] == "path_outside_root"  # import_file too
    for result in inside:
        assert not result.is_error, result.structured_content
        assert result.structured_content["size_bytes"] == len("order_id,amount\nA-1,10.00\n")
    # No root named: no path is read at all, not even one that would be inside.
    (unset, *_) = asyncio.run(go(None, ["sub/orders.csv"]))
    assert unset.is_error and unset.structured_content["error"] == "file_root_not_set"


def test_stdio_argument_errors_are_product_shaped(database_url: str) -> None:
    async def go() -> list[Any]:
        async with _client(database_url, "--tenant", "sample") as c:
            return [await c.call_tool("check_refund", {"amount_minor": -1, "currency": "USD", "charge_id": "ch_1"}),
                    await c.call_tool("triage_dispute", {}),
                    await c.call_tool("list_disputes", {})]

    negative, missing, after = asyncio.run(go())
    assert negative.is_error and negative.structured_content["error"] == "invalid_argument"
    assert negative.structured_content["argument"] == "amount_minor"
    assert missing.structured_content == {**missing.structured_content, "error": "invalid_argument",
                                          "argument": "dispute_id", "detail": "dispute_id: Field required"}
    assert not after.is_error  # the session goes on
