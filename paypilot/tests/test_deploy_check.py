"""`manage.py check --deploy --fail-level WARNING` passes with production-like values."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(extra_env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(extra_env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )


PRODUCTION_ENV = {
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "DJANGO_ALLOWED_HOSTS": "paypilot.example.com",
    "DJANGO_SECURE_SSL_REDIRECT": "1",
    "DJANGO_SECURE_COOKIES": "1",
    "DJANGO_HSTS_SECONDS": "31536000",
    "DJANGO_BEHIND_TLS_PROXY": "1",
}


def test_deploy_check_passes_with_production_values():
    result = _run(PRODUCTION_ENV, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr


def test_deploy_check_fails_with_development_defaults():
    result = _run({}, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode != 0
    assert "security.W" in result.stderr + result.stdout


def test_debug_defaults_to_off():
    result = _run({}, "shell", "-c", "from django.conf import settings; print(settings.DEBUG)")
    assert result.stdout.strip().splitlines()[-1] == "False"
