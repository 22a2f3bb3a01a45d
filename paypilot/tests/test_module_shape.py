"""Every app module is small and says its one job: at most 450 lines, first line a one-line docstring.

Tests and migrations are exempt; so is an empty `__init__.py` (a package marker).
"""

from __future__ import annotations

from pathlib import Path

from paypilot.tests.test_import_graph import project_modules

MAX_LINES = 450


def _modules() -> list[tuple[str, Path, str]]:
    return [(name, path, path.read_text(encoding="utf-8")) for name, path in sorted(project_modules().items())]


def test_no_app_module_is_over_450_lines() -> None:
    long = [f"{path}: {text.count(chr(10))} lines" for _, path, text in _modules() if text.count("\n") > MAX_LINES]
    assert long == []


def test_every_app_module_starts_with_a_one_line_docstring() -> None:
    missing = []
    for _, path, text in _modules():
        if not text.strip():
            continue
        first = text.split("\n", 1)[0]
        # `"""Summary."""` or `"""Summary` continued below; a bare `"""` says nothing on line one.
        if not first.startswith('"""') or len(first.strip('"').strip()) < 10:
            missing.append(f"{path}: {first[:60]!r}")
    assert missing == []
