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


# The deploy settings docs/deploy.md gives: PAYPILOT_TLS=1 stands for the four TLS switches.
TLS_ENV = {
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "DJANGO_ALLOWED_HOSTS": "paypilot.example.com",
    "PAYPILOT_TLS": "1",
    "DJANGO_BEHIND_TLS_PROXY": "1",
}


def test_deploy_check_passes_with_paypilot_tls():
    result = _run(TLS_ENV, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr


def test_paypilot_tls_turns_on_hsts_redirect_and_secure_cookies():
    script = ("from django.conf import settings as s; print(s.SECURE_HSTS_SECONDS, s.SECURE_SSL_REDIRECT, "
              "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_INCLUDE_SUBDOMAINS)")
    on = _run(TLS_ENV, "shell", "-c", script).stdout.strip().splitlines()[-1]
    assert on == "31536000 True True True True"
    off = _run({}, "shell", "-c", script).stdout.strip().splitlines()[-1]
    assert off == "0 False False False False"
    # Each switch can still be set on its own, against the TLS default.
    mixed = _run({**TLS_ENV, "DJANGO_HSTS_SECONDS": "600"}, "shell", "-c", script).stdout.strip().splitlines()[-1]
    assert mixed.startswith("600 True")


def test_hsts_header_is_sent_over_tls_behind_the_proxy():
    # /health answers 200 or 503 with whatever database the environment names: only the
    # headers matter here, and they are on every answer.
    script = ("from django.test import Client; r = Client().get('/health', HTTP_X_FORWARDED_PROTO='https'); "
              "print(r.headers.get('Strict-Transport-Security'), '|', "
              "r.headers.get('Content-Security-Policy', '').split(';')[0])")
    env = {**TLS_ENV, "DJANGO_ALLOWED_HOSTS": "testserver"}
    line = _run(env, "shell", "-c", script).stdout.strip().splitlines()[-1]
    assert line == "max-age=31536000; includeSubDomains; preload | default-src 'self'"
    plain = _run({**env, "PAYPILOT_TLS": "0"}, "shell", "-c", script).stdout.strip().splitlines()[-1]
    assert plain == "None | default-src 'self'"  # no HSTS without TLS, the CSP always


def test_deploy_check_fails_with_development_defaults():
    result = _run({}, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode != 0
    assert "security.W" in result.stderr + result.stdout


def test_debug_defaults_to_off():
    result = _run({}, "shell", "-c", "from django.conf import settings; print(settings.DEBUG)")
    assert result.stdout.strip().splitlines()[-1] == "False"
