"""docs/configuration.md and the code's environment reads never drift apart."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

from paypilot.config_surface import env_reads

DOC = Path(settings.BASE_DIR) / "docs" / "configuration.md"
_ROW = re.compile(r"^\|\s*`?([A-Z][A-Z0-9_]*)`?\s*\|(.*)\|(.*)\|\s*$")


def documented() -> dict[str, tuple[str, str]]:
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match and match.group(1) != "VARIABLE":
            rows[match.group(1)] = (match.group(2).strip(), match.group(3).strip())
    return rows


def test_every_variable_read_is_documented_and_every_documented_one_is_read():
    in_code = {read.name: read.where for read in env_reads()}
    in_docs = documented()
    missing = sorted(f"{name} ({where})" for name, where in in_code.items() if name not in in_docs)
    stale = sorted(set(in_docs) - set(in_code))
    assert not missing, f"read in code but not in docs/configuration.md: {missing}"
    assert not stale, f"documented but read nowhere: {stale}"


def test_every_documented_variable_has_a_default_and_a_meaning():
    for name, (default, meaning) in documented().items():
        assert default and meaning, name


def test_settings_reads_are_all_found():
    # The parser must see the whole surface of settings.py, whatever the cast.
    names = {read.name for read in env_reads()}
    assert {"DATABASE_URL", "PAYPILOT_RETENTION_MONTHS", "PAYPILOT_WEBHOOK_BODY_DAYS",
            "PAYPILOT_PII_SALT", "ANYMAIL", "PAYPILOT_FACTS_DIR", "DJANGO_STATIC_ROOT"} <= names


def test_the_docs_call_manage_py_one_way():
    # README's way: the project's own virtualenv, so a command copied from any page works.
    root = Path(settings.BASE_DIR)
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    other = [f"{page.name}:{number}" for page in pages
             for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"(?<![/\w.-])python3? manage\.py", line)]
    assert other == []
