"""The root URL table: what resolves where, and in what order it is tried."""

from __future__ import annotations

import pytest
from django.urls import get_resolver, resolve, reverse

WEBHOOK_PATHS = ("/t/acme/webhooks/stripe", "/t/acme/webhooks/chargebee/k3y", "/webhooks/recharge", "/r/tok")


@pytest.mark.parametrize("path", WEBHOOK_PATHS)
def test_provider_webhooks_are_matched_before_any_other_route_is_tried(path):
    """Most requests are provider deliveries: they must not walk (and record) every other
    app's patterns first."""
    match = get_resolver().resolve(path)
    assert match.url_name.startswith(("webhook-", "recovery-link"))
    assert len(match.tried or []) <= 5  # only the integrations patterns before it


@pytest.mark.parametrize("name, path", [
    ("landing", "/"), ("health", "/health"), ("metrics", "/metrics"), ("token-list", "/tokens"),
    ("decide", "/decide"), ("report", "/report"), ("report-csv", "/report.csv"), ("payment-failed", "/payment-failed"),
    ("recon-review", "/recon/review"), ("refusals", "/refusals"), ("mcp", "/mcp"),
])
def test_the_other_routes_still_resolve_to_their_names(name, path):
    assert reverse(name) == path
    assert resolve(path).url_name == name
