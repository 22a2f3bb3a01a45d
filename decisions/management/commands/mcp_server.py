"""`manage.py mcp_server`: the read-only decision-table MCP server over stdio.

stdout carries only the protocol; every log line goes to stderr.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.core.management.base import BaseCommand

from decisions import rails
from decisions.mcp_server import build_server


class Command(BaseCommand):
    help = "Serve the bank-rail decision tables as an MCP server over stdio (read-only)."

    def handle(self, *args: Any, **options: Any) -> None:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, force=True)
        for name in rails.RAILS:
            rails.rail_get(name)  # load and check every table before the first request
        build_server().run("stdio")
