"""A database that cannot be reached is a JSON 503 with Retry-After on every route
(issue 18: every webhook got Django's HTML 500 during an outage). A real unreachable
PostgreSQL (nothing listens on port 1), in a fresh process so this test's database stays."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PROBE = r"""
import django, json
django.setup()
from django.test import Client
client = Client(raise_request_exception=False, HTTP_AUTHORIZATION="Bearer pp_abcdefgh_" + "x" * 32)
sig = {"Stripe-Signature": "t=1,v1=00"}
calls = [
    ("GET", "/health", None, {}),
    ("POST", "/decide", {"invoice_id": "in_1", "failure_code": "card_expired"}, {}),
    ("POST", "/payment-failed", {"customer_id": "c", "amount": 1, "currency": "usd", "failure_code": "x"}, {}),
    ("POST", "/payment-failed/batch", {"events": []}, {}),
    ("POST", "/decisions/in_1/outcome", {"outcome": "paid", "report_key": "k"}, {}),
    ("GET", "/decisions/in_1", None, {}),
    ("POST", "/t/acme/webhooks/stripe", {"id": "evt_1", "type": "invoice.paid"}, sig),
    ("POST", "/webhooks/recharge", {"charge": {}}, {}),
    ("POST", "/t/acme/webhooks/chargebee/k", {"id": "ev_1"}, {}),
    ("GET", "/report", None, {}),
    ("GET", "/metrics", None, {}),
    ("GET", "/tokens", None, {}),
    ("GET", "/portfolio-impact", None, {}),
]
out = []
for method, path, body, headers in calls:
    if method == "GET":
        r = client.get(path, headers=headers)
    else:
        r = client.post(path, data=json.dumps(body), content_type="application/json", headers=headers)
    kind = r.headers.get("Content-Type", "")
    error = json.loads(r.content).get("error") if kind.startswith("application/json") else None
    out.append({"path": path, "status": r.status_code, "type": kind,
                "retry_after": r.headers.get("Retry-After", ""), "error": error})
print(json.dumps(out))
"""


def test_every_route_answers_json_503_with_retry_after_when_the_database_is_down() -> None:
    env = {**os.environ, "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "PAYPILOT_TESTING": "1",
           "DJANGO_SETTINGS_MODULE": "paypilot.settings", "PAYPILOT_DB_RETRY_AFTER_SECONDS": "7"}
    done = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for result in results:
        assert result["status"] == 503, result
        assert result["type"].startswith("application/json"), result
        assert result["retry_after"] == "7", result
    assert {r["error"] for r in results if r["path"] != "/health"} <= {"database_unavailable", "audit_unavailable"}
    # The traceback of each fault reaches the log, named by request id (django.request).
    assert "request_id=" in done.stderr and "OperationalError" in done.stderr
