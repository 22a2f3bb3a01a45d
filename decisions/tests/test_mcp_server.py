"""The MCP server: a real subprocess spoken to with the SDK's own client, and the same
tools run again with sockets disabled."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from decisions import mcp_server

MANAGE = Path(settings.BASE_DIR) / "manage.py"
HINTS = {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True, "open_world_hint": False}


def _params() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[str(MANAGE), "mcp_server"],
        cwd=str(MANAGE.parent),
        env={"DJANGO_SETTINGS_MODULE": "paypilot.settings", "PAYPILOT_LOG_LEVEL": "WARNING"},
    )


async def _session_transcript(server: Any) -> dict[str, Any]:
    async with Client(server, read_timeout_seconds=30) as client:
        tools = (await client.list_tools()).tools
        calls = {
            "r11": await client.call_tool("lookup_return_code", {"code": "R11"}),
            "r99": await client.call_tool("lookup_return_code", {"code": "R99", "rail": "ach"}),
            "explain_r11": await client.call_tool("explain", {"code": "R11"}),
            "list": await client.call_tool("list_decisions", {}),
            "sepa": await client.call_tool("lookup_return_code", {"code": "MD06", "rail": "sepa"}),
            "bacs": await client.call_tool("explain", {"code": "ARUDD-1", "rail": "bacs"}),
        }
        return {"server_info": client.server_info, "tools": tools, "calls": calls}


def _check(transcript: dict[str, Any]) -> None:
    tools = transcript["tools"]
    assert sorted(t.name for t in tools) == sorted(mcp_server.TOOL_NAMES)
    for tool in tools:
        for hint, value in HINTS.items():
            assert getattr(tool.annotations, hint) is value, (tool.name, hint)
    calls = transcript["calls"]
    for result in calls.values():
        assert not result.is_error
        # Structured content plus the same JSON as text.
        assert json.loads(result.content[0].text) == result.structured_content
    r11 = calls["r11"].structured_content
    assert (r11["row"], r11["matched"], r11["family"], r11["family_stated"]) == (4, True, "unauthorized", True)
    r99 = calls["r99"].structured_content
    assert r99["row"] == 5 and r99["matched"] is False and r99["person_acts_first"] is True
    assert r99["reason"].startswith("fell through") and r99["code_shaped"] is True
    assert "unauthorized" in calls["explain_r11"].structured_content["family_statement"]
    rows = calls["list"].structured_content["rows"]
    assert [r["row"] for r in rows] == [1, 2, 3, 4, 5] and rows[3]["codes"] == ["R11"]
    assert calls["sepa"].structured_content["row"] == 3
    bacs = calls["bacs"].structured_content
    assert bacs["row"] == 5 and bacs["source_quality"] == "secondary_sources_only"


def test_subprocess_handshake_tools_and_answers() -> None:
    transcript = asyncio.run(_session_transcript(_params()))
    assert transcript["server_info"] is None or transcript["server_info"].name == mcp_server.SERVER_NAME
    _check(transcript)


def test_tools_run_with_sockets_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("network disabled in this test")

    # The event loop's own wake-up pipe is made first; after that any attempt to open a
    # socket fails the call. The in-process transport itself needs none.
    loop = asyncio.new_event_loop()
    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "socketpair", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    try:
        _check(loop.run_until_complete(_session_transcript(mcp_server.build_server())))
    finally:
        loop.close()
    # And the tool functions called directly.
    assert mcp_server.lookup_return_code("R11")["row"] == 4
    assert mcp_server.list_decisions("sepa")["rail"] == "sepa"
    assert mcp_server.explain("R99")["matched"] is False


async def _refusals() -> dict[str, Any]:
    async with Client(mcp_server.build_server(), read_timeout_seconds=30) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        return {
            "server_info": client.server_info,
            "tools": tools,
            "swift": await client.call_tool("lookup_return_code", {"code": "R01", "rail": "swift"}),
            "list_swift": await client.call_tool("list_decisions", {"rail": "swift"}),
            "long": await client.call_tool("explain", {"code": "R" * 5000}),
            "blank": await client.call_tool("lookup_return_code", {"code": "   "}),
        }


def test_refused_calls_are_tool_errors_with_a_structured_reason_and_no_echo() -> None:
    answers = asyncio.run(_refusals())
    for key, reason in (("swift", "unknown_rail"), ("list_swift", "unknown_rail"), ("long", "code_too_long"),
                        ("blank", "code_empty")):
        result = answers[key]
        assert result.is_error is True, key
        assert result.structured_content["error"] == reason
        assert json.loads(result.content[0].text) == result.structured_content
    assert answers["swift"].structured_content["rails"] == ["ach", "sepa", "bacs"]
    assert answers["long"].structured_content["max_length"] == mcp_server.MAX_CODE_LENGTH
    assert "RRRR" not in answers["long"].content[0].text and "swift" not in answers["swift"].content[0].text


def test_schema_declares_the_rail_enum_the_length_cap_and_a_server_version() -> None:
    answers = asyncio.run(_refusals())
    for name in ("lookup_return_code", "list_decisions"):
        rail = answers["tools"][name].input_schema["properties"]["rail"]
        assert rail["enum"] == list(mcp_server.rails.RAILS)
    assert answers["tools"]["explain"].input_schema["properties"]["rail"]["enum"][:3] == list(mcp_server.rails.RAILS)
    code = answers["tools"]["explain"].input_schema["properties"]["code"]
    assert code["maxLength"] == mcp_server.MAX_CODE_LENGTH
    info = answers["server_info"]
    assert info is not None and info.version == mcp_server.server_version()
    assert mcp_server.server_version() not in ("", None)


def test_stdout_carries_only_the_protocol() -> None:
    import subprocess

    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}) + "\n"
    done = subprocess.run(  # noqa: S603 - our own interpreter and manage.py
        [sys.executable, str(MANAGE), "mcp_server"], input=request, capture_output=True, text=True,
        timeout=60, cwd=str(MANAGE.parent),
    )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    # Whatever the server answers, every stdout line is a JSON-RPC message; logs go to stderr.
    assert all(json.loads(line).get("jsonrpc") == "2.0" for line in lines)


async def _network_explanations() -> dict[str, Any]:
    async with Client(mcp_server.build_server(), read_timeout_seconds=30) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        return {
            "tools": tools,
            "mac03": await client.call_tool("explain", {"code": "03", "rail": "mastercard"}),
            "mac26": await client.call_tool("explain", {"code": "26", "rail": "mastercard"}),
            "visa46": await client.call_tool("explain", {"code": "46", "rail": "visa"}),
            "visa51": await client.call_tool("explain", {"code": "51", "rail": "visa"}),
            "lookup_visa": await client.call_tool("lookup_return_code", {"code": "46", "rail": "visa"}),
        }


def test_explain_cites_the_card_network_rules() -> None:
    answers = asyncio.run(_network_explanations())
    assert answers["tools"]["explain"].input_schema["properties"]["rail"]["enum"] == [
        *mcp_server.rails.RAILS, "visa", "mastercard"]
    mac03 = answers["mac03"].structured_content
    assert not answers["mac03"].is_error
    assert (mac03["matched"], mac03["retry"]) == (True, "never")
    assert mac03["rules"][0]["rule_id"] == "mc_mac_03_never" and mac03["rules"][0]["source_url"].startswith("https://")
    assert [limit["rule_id"] for limit in mac03["limits"]] == ["mc_tpe_30d_limit"]
    mac26 = answers["mac26"].structured_content
    assert (mac26["retry"], mac26["wait_hours"]) == ("after_wait", 48)
    assert answers["visa46"].structured_content["rules"][0]["rule_id"] == "visa_cat1_never"
    visa51 = answers["visa51"].structured_content
    assert (visa51["matched"], visa51["retry"]) == (False, "allowed_within_limits")
    assert visa51["limits"][0]["max_attempts"] == 15
    # The bank-rail tools keep their bank-rail enum.
    assert answers["lookup_visa"].is_error is True
    assert answers["lookup_visa"].structured_content["error"] == "unknown_rail"
