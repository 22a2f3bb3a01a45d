"""`manage.py pg_roles`: the non-owner application role for the web and the workers."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS, connections

from paypilot.pg_roles import DEFAULT_APP_ROLE, app_role_apply, app_role_problems


class Command(BaseCommand):
    help = (
        "Create or update the PostgreSQL application role (LOGIN, NOSUPERUSER, NOBYPASSRLS, "
        "owns nothing) and grant it only what the application needs; run as the owner after "
        "every migrate. --check reports and exits 1 on any deviation."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--role", default=DEFAULT_APP_ROLE, help=f"role name (default {DEFAULT_APP_ROLE})")
        parser.add_argument(
            "--password-stdin", action="store_true",
            help="read the role's password from the first line of standard input",
        )
        parser.add_argument("--check", action="store_true", help="report problems, change nothing")
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS)

    def handle(self, *args: Any, **options: Any) -> None:
        using, role = options["database"], options["role"]
        if connections[using].vendor != "postgresql":
            raise CommandError("pg_roles needs PostgreSQL (DATABASE_URL=postgres://...)")
        if not options["check"]:
            password = None
            if options["password_stdin"]:
                password = sys.stdin.readline().rstrip("\n")
                if not password:
                    raise CommandError("--password-stdin: empty password")
            plans = app_role_apply(role=role, password=password, using=using)
            limited = [p for p in plans if p.privileges != ["SELECT", "INSERT", "UPDATE", "DELETE"]]
            self.stdout.write(f"role {role}: privileges granted on {len(plans)} tables")
            for plan in limited:
                self.stdout.write(f"  {plan.table}: {', '.join(plan.privileges)} only")
        problems = app_role_problems(role=role, using=using)
        for problem in problems:
            self.stderr.write(problem)
        if problems:
            raise CommandError(f"{len(problems)} problem(s) with role {role}")
        if options["check"]:
            self.stdout.write(f"role {role}: as expected")
