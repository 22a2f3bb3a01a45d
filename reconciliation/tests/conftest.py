"""Every file a reconciliation test imports is first offered to the columnar reader (which
otherwise starts at 256 KiB), so the whole suite runs through it and its fall-back to the
row parser; test_columnar.py compares the two paths directly."""

from __future__ import annotations

import pytest

from reconciliation.services import imports


@pytest.fixture(autouse=True)
def columnar_for_every_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(imports, "COLUMNAR_MIN_BYTES", 0)
