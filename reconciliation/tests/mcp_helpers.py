"""Helpers for the MCP tests: the SDK's own clients over HTTP and stdio, and a table digest."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import httpx2
from django.conf import settings
from django.db import connection
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

MANAGE = Path(settings.BASE_DIR) / "manage.py"


def http_client(url: str, token: str | None, **kwargs: Any) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(f"{url}/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=60))
    return Client(transport, read_timeout_seconds=60, **kwargs)


def stdio_params(*args: str) -> StdioServerParameters:
    env = {"DJANGO_SETTINGS_MODULE": "paypilot.settings", "PAYPILOT_LOG_LEVEL": "WARNING"}
    import os

    for name in ("DATABASE_URL", "PATH", "HOME"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    return StdioServerParameters(command=sys.executable, args=[str(MANAGE), "mcp_server", *args],
                                 cwd=str(MANAGE.parent), env=env)


def tables_digest(*, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """sha256 of every row of every table (ordered by its first column): what a read-only
    tool must leave exactly as it was."""
    out = {}
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.django_table_names(only_existing=True, include_views=False)):
            if table in skip:
                continue
            quoted = connection.ops.quote_name(table)
            cursor.execute(f"SELECT * FROM {quoted} ORDER BY 1")
            out[table] = hashlib.sha256(repr(cursor.fetchall()).encode()).hexdigest()
    return out
