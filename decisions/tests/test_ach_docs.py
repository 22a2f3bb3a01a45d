"""docs/ach-return-decisions.md and the public /ach-returns page come from the table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from decisions import rails
from decisions.render import ach_markdown

DOC = Path(settings.BASE_DIR) / "docs" / "ach-return-decisions.md"


def test_committed_doc_matches_the_table() -> None:
    assert DOC.read_text(encoding="utf-8") == ach_markdown(), "run: python manage.py render_ach_docs"


def test_check_command_fails_on_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from decisions.management.commands import render_ach_docs

    drifted = tmp_path / "doc.md"
    drifted.write_text(ach_markdown().replace("R11", "R12"), encoding="utf-8")
    monkeypatch.setattr(render_ach_docs, "DOC_PATH", drifted)
    with pytest.raises(CommandError, match="drifted"):
        call_command("render_ach_docs", "--check")


def test_doc_rows_list_every_code_on_its_row() -> None:
    text = DOC.read_text(encoding="utf-8")
    for row in rails.list_decisions("ach")["rows"]:
        line = next(line for line in text.splitlines() if line.startswith(f"| {row['row']} |"))
        assert line.rstrip(" |").endswith(", ".join(row["codes"]))


@pytest.mark.django_db
def test_public_page_renders_the_table(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/ach-returns")
    assert response.status_code == 200
    html = response.content.decode()
    for row in rails.list_decisions("ach")["rows"]:
        match = re.search(rf'<tr data-row="{row["row"]}">(.*?)</tr>', html, re.S)
        assert match, row["row"]
        assert re.findall(r"<code>(R\d\d)</code>", match.group(1)) == row["codes"]
    assert "unauthorized" in html
