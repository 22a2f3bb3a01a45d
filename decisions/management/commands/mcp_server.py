"""`manage.py mcp_server [--tenant T [--role R]]`: the MCP server over stdio.

Without --tenant: the three read-only decision-table tools. With --tenant: those plus the
thirteen payments-ops tools of that tenant's workspace (reconciliation.mcp_tools, offered
through paypilot.mcp_registry), acting
with --role (default viewer: read only; tenant_admin may import and save). stdout carries
only the protocol; every log line goes to stderr.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from decisions import rails
from decisions.mcp_server import build_server
from paypilot.mcp_registry import tenant_server_build
from paypilot.models import Role, Tenant


class Command(BaseCommand):
    help = ("Serve the bank-rail decision tables as an MCP server over stdio (read-only); with --tenant, also "
            "that tenant's payments-ops tools.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="tenant slug: add the payments-ops tools scoped to this tenant")
        parser.add_argument("--role", default=Role.VIEWER,
                            choices=[Role.VIEWER, Role.APPROVER, Role.INTEGRATOR, Role.TENANT_ADMIN],
                            help="the role the tools act with (default viewer: read only; tenant_admin writes)")

    def handle(self, *args: Any, **options: Any) -> None:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, force=True)
        for name in rails.RAILS:
            rails.rail_get(name)  # load and check every table before the first request
        if not options["tenant"]:
            build_server().run("stdio")
            return
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {options['tenant']!r}")
        if not tenant.is_active:
            raise CommandError(f"tenant {tenant.slug} is {tenant.status}")
        server = tenant_server_build(tenant=tenant, role=options["role"])
        if server is None:
            raise CommandError("no app offers tenant tools (is reconciliation installed?)")
        server.run("stdio")
