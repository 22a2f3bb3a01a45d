"""Shared pytest fixtures: tenants, tokens and authenticated API clients; the egress guard;
the clock shift (PAYPILOT_TEST_CLOCK_SHIFT_DAYS)."""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine
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
# --- egress guard ---------------------------------------------------------------------------
# The suite runs offline. Every outbound connection a test could make goes through one of
# the named seams below, and each seam is replaced in the tests; anything else is a new
# outbound call nobody listed. The guard lets loopback through (PostgreSQL, Redis, the
# tests' own live servers, the browser test's Chromium) and Unix sockets, and refuses every
# other connect() and name lookup with the caller's file:line. The refusal is also recorded
# and fails the test at teardown, so code that swallows the error cannot hide the call.
#
# Seams (where the outbound call lives -> how the tests replace it):
#   Stripe API      integrations/stripe_api.py -> tests monkeypatch its functions
#   model endpoint  dunning/llm.py (OpenAI client) -> tests replace the client factory
#   email backend   Django's EMAIL_BACKEND -> pytest-django's locmem backend (mail.outbox)
# Python-level sockets only: libpq (PostgreSQL, loopback here) and Chromium (a subprocess
# started with --disable-background-networking) connect from C and are not seen.
EGRESS_SEAMS = {
    "stripe_api": "integrations/stripe_api.py",
    "model_endpoint": "dunning/llm.py",
    "email_backend": "settings.EMAIL_BACKEND (locmem in tests)",
}
_ROOT = Path(__file__).resolve().parent
_GUARD_FILE = str(Path(__file__).resolve())
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


class EgressBlocked(RuntimeError):
    """An outbound connection from the test suite outside the named seams. A RuntimeError,
    not an OSError, so code treating network errors as "try later" does not swallow it."""


_egress_lock = threading.Lock()
_egress_violations: list[str] = []


def _is_loopback(host: Any) -> bool:
    if host is None:
        return True  # getaddrinfo(None, port): the local wildcard, a server binding
    name = host.decode() if isinstance(host, bytes) else str(host)
    name = name.strip("[]").split("%")[0].lower()
    if name in _LOCAL_NAMES or name == "":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified  # 0.0.0.0 / :: reach this machine


def egress_caller() -> str:
    """file:line of the innermost project frame that led here (the guard's own excluded),
    with the innermost library frame beside it when the call went through one."""
    frames = [f for f in traceback.extract_stack()[:-1] if f.filename != _GUARD_FILE]
    ours = [f for f in frames if f.filename.startswith(str(_ROOT)) and "/.venv/" not in f.filename
            and "site-packages" not in f.filename]
    library = frames[-1] if frames else None
    where = f"{ours[-1].filename}:{ours[-1].lineno}" if ours else "unknown"
    if library is not None and (not ours or library is not ours[-1]):
        where += f" (via {library.filename}:{library.lineno})"
    return where


def _refuse(what: str) -> None:
    message = (f"outbound {what} blocked by the test suite's egress guard at {egress_caller()}; "
               f"outbound calls go through a named seam ({', '.join(EGRESS_SEAMS)}), replaced in tests")
    with _egress_lock:
        _egress_violations.append(message)
    raise EgressBlocked(message)


def _address_host(family: int, address: Any) -> Any:
    if family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
        return address[0]
    return None  # AF_UNIX and friends never leave the machine


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_sendto = socket.socket.sendto
_real_getaddrinfo = socket.getaddrinfo


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if not _is_loopback(_address_host(self.family, address)):
        _refuse(f"connection to {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    if not _is_loopback(_address_host(self.family, address)):
        _refuse(f"connection to {address!r}")
    return _real_connect_ex(self, address)


def _guarded_sendto(self: socket.socket, data: Any, *args: Any) -> Any:
    address = args[-1]
    if not _is_loopback(_address_host(self.family, address)):
        _refuse(f"datagram to {address!r}")
    return _real_sendto(self, data, *args)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not _is_loopback(host):
        _refuse(f"name lookup of {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


def _egress_guard_install() -> None:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign,assignment]
    socket.socket.sendto = _guarded_sendto  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = _guarded_getaddrinfo


def pytest_configure(config: pytest.Config) -> None:
    # Installed before any test module is imported, so no client can keep a real socket.
    _egress_guard_install()
    clock_shift_days()  # a malformed shift stops the run before any test, not in every test


@pytest.fixture
def egress_violations() -> list[str]:
    """The refusals recorded so far in this test; a test that trips the guard on purpose
    asserts on them and clears the list."""
    return _egress_violations


@pytest.fixture(autouse=True)
def _egress_guard_check() -> Iterator[None]:
    with _egress_lock:
        _egress_violations.clear()
    yield
    with _egress_lock:
        found, _egress_violations[:] = list(_egress_violations), []
    if found:
        pytest.fail("\n".join(found), pytrace=False)


# --- clock shift ----------------------------------------------------------------------------
# No test may depend on the day it runs. With PAYPILOT_TEST_CLOCK_SHIFT_DAYS=N every test runs
# with Python's clock N days from today and ticking (time-machine: datetime.now, date.today,
# time.time; not time.monotonic), so a test or code that assumes today's date fails today
# instead of on some later day. CI runs the suite once more with N=365. A test that fixes a
# date freezes the clock there for the whole test: `@pytest.mark.frozen_clock(NOW)` (or
# `pytestmark = pytest.mark.frozen_clock(NOW)` for a module), whatever the shift.
# `@pytest.mark.real_clock` runs a test on the real clock: only tests whose other half cannot
# be moved (a subprocess, a browser, a database's own now()); the list and the reasons are in
# docs/testing.md, "Tests and the clock".
CLOCK_SHIFT_ENV = "PAYPILOT_TEST_CLOCK_SHIFT_DAYS"


def clock_shift_days() -> float:
    raw = os.environ.get(CLOCK_SHIFT_ENV, "").strip()
    if not raw:
        return 0.0
    try:
        return float(raw)
    except ValueError:
        raise pytest.UsageError(f"{CLOCK_SHIFT_ENV} must be a number of days, not {raw!r}") from None


@pytest.fixture(autouse=True)
def _clock_shift(request: pytest.FixtureRequest) -> Iterator[None]:
    """The clock of every test: frozen at its `frozen_clock` date, real under `real_clock`,
    else today (plus the shift when one is asked for). Autouse in the root conftest, so it is
    in place before the test's own fixtures build their rows."""
    frozen = request.node.get_closest_marker("frozen_clock")
    if frozen is not None:
        with time_machine.travel(frozen.args[0], tick=False):
            yield
        return
    days = clock_shift_days()
    if not days or request.node.get_closest_marker("real_clock"):
        yield
        return
    with time_machine.travel(datetime.now(UTC) + timedelta(days=days), tick=True):
        yield


def pytest_report_header(config: pytest.Config) -> str | None:
    days = clock_shift_days()
    return f"clock shifted {days:g} days ahead ({CLOCK_SHIFT_ENV})" if days else None
