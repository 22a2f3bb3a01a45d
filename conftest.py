"""Shared pytest fixtures: tenants, tokens and authenticated API clients."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.core.management.color import no_style
from django.db import connection
from rest_framework.test import APIClient

from paypilot.db import OVERRIDE_TABLE, append_only_override
from paypilot.models import Tenant
from paypilot.services import tenant_create, token_issue


def pytest_addoption(parser: pytest.Parser) -> None:
    # Must live in the rootdir conftest: the approvals browser test saves its console
    # screenshot under docs/ only when asked.
    parser.addoption("--screenshots", action="store_true", default=False,
                     help="browser tests save screenshots under docs/")


@pytest.fixture(scope="session", autouse=True)
def _rate_limit_counters(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Rate-limit and lockout counters (files, paypilot.ratelimit) in this run's own
    directory, so parallel runs and earlier runs never share a count."""
    from django.conf import settings

    settings.PAYPILOT_RATE_LIMIT_DIR = tmp_path_factory.mktemp("ratelimit")


@pytest.fixture
def tenant(db) -> Tenant:  # type: ignore[no-untyped-def]
    return tenant_create(slug="acme", name="Acme Ltd")


@pytest.fixture
def other_tenant(db) -> Tenant:  # type: ignore[no-untyped-def]
    return tenant_create(slug="globex", name="Globex Corp")


@pytest.fixture
def make_token(db) -> Callable[..., str]:  # type: ignore[no-untyped-def]
    def _make(tenant: Tenant, role: str = "integrator") -> str:
        return token_issue(tenant=tenant, role=role).plaintext

    return _make


@pytest.fixture
def api_client_for(make_token) -> Callable[..., APIClient]:  # type: ignore[no-untyped-def]
    """`api_client_for(tenant, "integrator")` -> an APIClient sending that role's bearer token."""

    def _client(tenant: Tenant, role: str = "integrator") -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(tenant, role)}")
        return client

    return _client


@pytest.fixture
def committed_db(transactional_db):  # type: ignore[no-untyped-def]
    """Real commits (live servers, other processes). Teardown empties the tables under the
    append-only override: pytest-django's flush is a DELETE on SQLite, which the append-only
    triggers refuse."""
    yield
    if connection.vendor == "sqlite":
        tables = [t for t in connection.introspection.django_table_names(only_existing=True, include_views=False)
                  if t != OVERRIDE_TABLE]
        with append_only_override("retention_purge"), connection.cursor() as cursor:
            for sql in connection.ops.sql_flush(no_style(), tables):
                cursor.execute(sql)
