"""PostgreSQL fixtures: the application role and a raw connection made as that role."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection

from paypilot.pg_roles import app_role_apply
from paypilot.rls import rls_apply

APP_ROLE = "pp_app_test"

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row-level security and roles exist on PostgreSQL only"
)


@pytest.fixture
def app_role(transactional_db) -> str:  # type: ignore[no-untyped-def]
    rls_apply()
    app_role_apply(role=APP_ROLE)
    return APP_ROLE


def connect_as(role: str) -> psycopg.Connection:
    s = connection.settings_dict
    return psycopg.connect(
        host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, dbname=s["NAME"], user=role,
        autocommit=False,
    )


@pytest.fixture
def app_conn(app_role: str) -> Iterator[psycopg.Connection]:
    conn = connect_as(app_role)
    try:
        yield conn
    finally:
        conn.close()


@contextmanager
def django_as(role: str) -> Iterator[None]:
    """Django's own default connection reconnected as `role`, so requests and tasks run
    through the real stack under row-level security; the owner connection comes back after."""
    previous = connection.settings_dict["USER"]
    connection.close()
    connection.settings_dict["USER"] = role
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["USER"] = previous
