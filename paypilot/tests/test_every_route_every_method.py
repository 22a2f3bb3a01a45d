"""Every route of the URL table answers every HTTP method, for every kind of caller, without a 5xx."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.resolvers import RegexPattern, RoutePattern

from paypilot.models import Role
from paypilot.services import tenant_create, token_issue

pytestmark = pytest.mark.django_db

METHODS = ("get", "head", "post", "put", "patch", "delete", "options")
# Routes that negotiate (the report, the docs) are also asked for each other media type: an
# OPTIONS answer is DRF's metadata, which a CSV or HTML renderer cannot draw.
ACCEPTS = ("text/html", "text/csv", "application/json")
ROLES = ("anonymous", *Role.values, "staff_session")
# A value for every path argument the table names; `<str:provider>` gets a real provider so
# the webhook views run past their dispatch.
SAMPLE_ARGS = {"tenant": "walk", "provider": "stripe", "url_key": "k3y", "token": "tok", "prefix": "pp_nope",
               "object_id": "1", "content_type_id": "1", "id": "1", "break_id": "1", "invoice_id": "in_walk",
               "app_label": "paypilot", "url": "nowhere/"}
_ARG = re.compile(r"<(?:\w+:)?(\w+)>")
_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")


def _route(pattern: Any) -> str:
    text = str(pattern)
    if isinstance(pattern, RoutePattern):
        return _ARG.sub(lambda m: SAMPLE_ARGS[m.group(1)], text)
    assert isinstance(pattern, RegexPattern)
    return _GROUP.sub(lambda m: SAMPLE_ARGS[m.group(1)], text).lstrip("^").rstrip("$")


def _paths(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _paths(entry.url_patterns, prefix + _route(entry.pattern))
        else:
            yield "/" + prefix + _route(entry.pattern), entry


def url_table() -> list[str]:
    """One sample path per pattern, each checked to resolve to its own pattern's view; the
    admin's logout last, so the staff session lasts the whole walk."""
    paths = []
    for path, entry in _paths(get_resolver().url_patterns):
        assert resolve(path).func == entry.callback, path
        paths.append(path)
    return sorted(paths, key=lambda p: (p.endswith("/logout/"), p))


def _client(role: str, tenant: Any) -> Client:
    client = Client(raise_request_exception=False)
    if role == "staff_session":
        user = get_user_model().objects.create_superuser(username="walker", password="x", email="w@example.com")
        membership = get_user_model()._meta.get_field("admin_membership").related_model
        membership.objects.create(user=user, tenant=tenant)
        client.force_login(user)
    elif role != "anonymous":
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {token_issue(tenant=tenant, role=role).plaintext}"
    return client


def test_the_walk_covers_the_whole_table() -> None:
    paths = url_table()
    assert len(paths) == len(set(paths)) > 250  # the admin's pages are most of it
    for name in ("/report", "/report.csv", "/mcp", "/decide", "/recon/review", "/t/walk/webhooks/stripe"):
        assert name in paths


@pytest.mark.parametrize("role", ROLES)
def test_no_route_answers_any_method_with_a_5xx(role: str, settings: Any, tmp_path: Any) -> None:
    # Thousands of requests from one address: counted apart from the rest of the run.
    settings.PAYPILOT_RATE_LIMIT_PER_TOKEN = settings.PAYPILOT_RATE_LIMIT_PER_IP = 10**9
    settings.PAYPILOT_RATE_LIMIT_DIR = tmp_path
    tenant = tenant_create(slug="walk", name="Walk")
    client = _client(role, tenant)
    failures = []
    for path in url_table():
        for method in METHODS:
            accepts = (None,) if path.startswith("/admin/") else (None, *ACCEPTS)
            for accept in accepts:
                headers = {"HTTP_ACCEPT": accept} if accept else {}
                response = getattr(client, method)(path, **headers)
                if response.status_code >= 500:
                    failures.append(f"{method.upper()} {path} (Accept: {accept}) -> {response.status_code}")
    assert not failures, "\n".join(failures)
