"""manage.py config_report and the source parser behind it."""

from __future__ import annotations

import json
from io import StringIO

from django.conf import settings
from django.core.management import call_command

from paypilot.config_surface import config_report_rows, env_reads, mask


def _report(monkeypatch, **env: str) -> list[dict]:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = StringIO()
    call_command("config_report", "--format", "json", stdout=out)
    return json.loads(out.getvalue())


def test_sources_and_masking(monkeypatch):
    monkeypatch.delenv("PAYPILOT_RETENTION_MONTHS", raising=False)
    rows = {
        r["name"]: r
        for r in _report(
            monkeypatch,
            DJANGO_SECRET_KEY="very-secret-signing-key",
            PAYPILOT_PII_SALT="pepper-and-salt",
            REDIS_URL="redis://:redispass@cache.internal:6379/0",
            PAYPILOT_HOLDOUT_PCT="10",
        )
    }
    assert rows["DJANGO_SECRET_KEY"]["source"] == "environment"
    assert rows["DJANGO_SECRET_KEY"]["value"] == "********"
    assert rows["PAYPILOT_PII_SALT"]["value"] == "********"
    assert rows["REDIS_URL"]["value"] == "redis://:********@cache.internal:6379/0"
    assert rows["PAYPILOT_HOLDOUT_PCT"] == {**rows["PAYPILOT_HOLDOUT_PCT"], "source": "environment", "value": "10"}
    assert rows["PAYPILOT_RETENTION_MONTHS"]["source"] == "default"
    assert rows["PAYPILOT_RETENTION_MONTHS"]["value"] == "12"
    assert rows["PAYPILOT_REQUIRE_SECRET_KEY"]["secret"] is False  # a boolean holds no secret


def test_text_output_never_shows_a_secret(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-abcdef123456")
    out = StringIO()
    call_command("config_report", stdout=out)
    text = out.getvalue()
    assert "sk-live-abcdef123456" not in text
    assert "OPENAI_API_KEY" in text and "variables" in text


def test_mask_keeps_url_shape_without_password():
    assert mask("DATABASE_URL", "postgres://app:pw@db:5432/pp") == "postgres://app:********@db:5432/pp"
    assert mask("DATABASE_URL", "sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"


def test_parser_finds_every_kind_of_read(tmp_path):
    package = tmp_path / "paypilot"
    (package / "tests").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text(
        "import os\nimport environ\nenv = environ.Env()\n"
        "A = env.int('VAR_A', default=3)\nB = env('VAR_B')\nC = os.environ.get('VAR_C', 'x')\n"
        "D = os.environ['VAR_D']\nE = os.getenv('VAR_E')\nname = 'dynamic'\nF = os.environ.get(name)\n"
    )
    (package / "tests" / "test_x.py").write_text("import os\nos.environ.get('ONLY_IN_TESTS')\n")
    reads = {r.name: r for r in env_reads(base=tmp_path, packages=["django.contrib.auth", "paypilot"])}
    assert set(reads) == {"VAR_A", "VAR_B", "VAR_C", "VAR_D", "VAR_E"}
    assert reads["VAR_A"].default == "3" and reads["VAR_A"].cast == "int"
    assert reads["VAR_C"].default == "'x'"


def test_defaults_are_shown_evaluated_not_as_python_source(monkeypatch):
    for name in ("DATABASE_URL", "DJANGO_STATIC_ROOT", "PAYPILOT_SEND_FALLBACK_DIR", "PAYPILOT_FACTS_DIR"):
        monkeypatch.delenv(name, raising=False)
    rows = {row.name: row for row in config_report_rows(environ={})}
    assert rows["DATABASE_URL"].value == f"sqlite:///{settings.BASE_DIR / 'db.sqlite3'}"
    assert rows["DJANGO_STATIC_ROOT"].value == str(settings.BASE_DIR / "var" / "static")
    for row in rows.values():
        assert "BASE_DIR" not in row.value and "{" not in row.value, (row.name, row.value)
