"""`manage.py catalogue_check` lists incomplete locales with their reasons."""

from __future__ import annotations

import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from dunning.catalogue import LOCALES_DIR


def test_shipped_catalogue_is_complete() -> None:
    out = StringIO()
    call_command("catalogue_check", "--strict", stdout=out)
    assert "served: de, en, es, fr" in out.getvalue()
    assert "incomplete: none" in out.getvalue()


def test_incomplete_locale_is_listed_with_reason(tmp_path: Path) -> None:
    for path in LOCALES_DIR.glob("*.json"):
        shutil.copy(path, tmp_path / path.name)
    data = json.loads((LOCALES_DIR / "de.json").read_text(encoding="utf-8"))
    del data["diagnosis"]["card_expired"]
    (tmp_path / "de.json").write_text(json.dumps(data), encoding="utf-8")

    out = StringIO()
    call_command("catalogue_check", "--directory", str(tmp_path), stdout=out)
    assert "served: en, es, fr" in out.getvalue()
    assert "incomplete: de: 1 problem(s): missing:diagnosis.card_expired" in out.getvalue()
    with pytest.raises(CommandError):
        call_command("catalogue_check", "--directory", str(tmp_path), "--strict", stdout=StringIO())
