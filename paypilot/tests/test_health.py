"""GET /health: a real database round trip, and a 503 naming only the error class."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_health_ok(client, settings):
    settings.PAYPILOT_COMMIT = "abc1234"
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "commit": "abc1234", "database": "ok", "workers": "none"}


def test_health_503_when_database_unreachable():
    # A real unreachable PostgreSQL (nothing listens on port 1), in a fresh process.
    env = {**os.environ, "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "PAYPILOT_TESTING": "1"}
    code = (
        "import django, json; django.setup();"
        "from django.test import Client;"
        "r = Client().get('/health');"
        "print(json.dumps({'status': r.status_code, 'body': r.json()}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**env, "DJANGO_SETTINGS_MODULE": "paypilot.settings"},
        capture_output=True, text=True, timeout=60, check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["status"] == 503
    assert result["body"]["status"] == "unavailable"
    assert result["body"]["database"] == "OperationalError"
    assert "127.0.0.1" not in json.dumps(result["body"])
