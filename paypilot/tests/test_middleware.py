"""Request id, timing, security headers, access log and rate limits."""

from __future__ import annotations

import json
import logging

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from paypilot.ratelimit import counters_clear
from paypilot.services import token_issue

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_counters():
    counters_clear()
    yield
    counters_clear()


def test_sane_request_id_is_kept_and_insane_one_replaced(client):
    kept = client.get("/health", HTTP_X_REQUEST_ID="req-12345678")
    assert kept["X-Request-ID"] == "req-12345678"
    replaced = client.get("/health", HTTP_X_REQUEST_ID="bad id with spaces\n")
    assert replaced["X-Request-ID"] != "bad id with spaces\n"
    assert len(replaced["X-Request-ID"]) == 32
    assert replaced["X-Process-Time"].endswith("ms")


def test_security_headers_present(client):
    response = client.get("/health")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "same-origin"


def test_access_log_is_one_json_line_without_headers_or_bodies(client, caplog, tenant):
    token = token_issue(tenant=tenant, role="tenant_admin").plaintext
    with caplog.at_level(logging.INFO, logger="paypilot.access"):
        client.get("/tokens", HTTP_AUTHORIZATION=f"Bearer {token}", REMOTE_ADDR="203.0.113.77")
    [record] = [r for r in caplog.records if r.name == "paypilot.access"]
    line = json.loads(record.getMessage())
    assert set(line) == {"method", "route", "status", "ms", "client", "request_id"}
    assert line["client"] == "203.0.113.0/24"
    assert line["route"] == "tokens"
    assert token not in record.getMessage()


def test_ipv6_client_is_logged_as_its_48_prefix(client, caplog):
    with caplog.at_level(logging.INFO, logger="paypilot.access"):
        client.get("/health", REMOTE_ADDR="2001:db8:abcd:12::1")
    line = json.loads([r for r in caplog.records if r.name == "paypilot.access"][0].getMessage())
    assert line["client"] == "2001:db8:abcd::/48"


@override_settings(PAYPILOT_RATE_LIMIT_PER_TOKEN=3, PAYPILOT_RATE_LIMIT_PER_IP=0)
def test_token_rate_limit_answers_429_with_retry_after(tenant):
    token = token_issue(tenant=tenant, role="tenant_admin").plaintext
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    statuses = [client.get("/tokens").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = client.get("/tokens")
    assert limited.status_code == 429
    assert limited.json()["error"] == "rate_limited"
    assert 1 <= int(limited["Retry-After"]) <= 60
    other = token_issue(tenant=tenant, role="tenant_admin").plaintext
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {other}")
    assert client.get("/tokens").status_code == 200  # the limit is per token


@override_settings(PAYPILOT_RATE_LIMIT_PER_TOKEN=0, PAYPILOT_RATE_LIMIT_PER_IP=2)
def test_ip_rate_limit_applies_without_a_token(client):
    assert client.get("/tokens", REMOTE_ADDR="198.51.100.1").status_code == 401
    assert client.get("/tokens", REMOTE_ADDR="198.51.100.1").status_code == 401
    limited = client.get("/tokens", REMOTE_ADDR="198.51.100.1")
    assert limited.status_code == 429 and limited["Retry-After"]
    assert client.get("/tokens", REMOTE_ADDR="198.51.100.2").status_code == 401
    assert client.get("/health", REMOTE_ADDR="198.51.100.1").status_code == 200  # exempt


def test_metrics_requires_admin_and_counts_requests(client, tenant, api_client_for):
    client.get("/health")
    assert api_client_for(tenant, "viewer").get("/metrics").status_code == 403
    assert APIClient().get("/metrics").status_code == 401
    response = api_client_for(tenant, "platform_admin").get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert 'paypilot_http_requests_total{method="GET",route="health",status="200"}' in text
