"""DESIGN.md section 1: an app imports only from the apps above it. The one checked here in
code is the rule most tempting to break: reconciliation stands beside the dunning apps on the
core and never imports them (it reaches the chat model through `paypilot.chat`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# app -> apps it must never import (DESIGN.md section 1)
FORBIDDEN = {
    "reconciliation": {"ledger", "decisions", "dunning", "approvals", "integrations", "operations"},
    "decisions": {"ledger", "dunning", "approvals", "integrations", "reconciliation", "operations"},
    "paypilot": {"ledger", "decisions", "dunning", "approvals", "integrations", "reconciliation", "operations"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("app", sorted(FORBIDDEN))
def test_app_imports_no_app_below_it(app: str) -> None:
    offenders = []
    for path in sorted((ROOT / app).rglob("*.py")):
        rel = path.relative_to(ROOT)
        if "tests" in rel.parts or "migrations" in rel.parts:
            continue
        bad = _imports(path) & FORBIDDEN[app]
        if bad:
            offenders.append(f"{rel}: {sorted(bad)}")
    assert offenders == []
