"""The ledger gives the shadow replay its invoice currency through the core, without importing decisions."""

from __future__ import annotations

import ast
from pathlib import Path

from ledger import apps as ledger_apps
from paypilot.shadow_sources import currency_sources

LEDGER = Path(ledger_apps.__file__).resolve().parent


def test_the_ledgers_currency_source_is_registered_in_the_core() -> None:
    assert ledger_apps._invoice_currency in currency_sources()


def test_no_ledger_module_imports_the_decisions_app() -> None:
    offenders = []
    for path in sorted(LEDGER.rglob("*.py")):
        if {"tests", "migrations"} & set(path.relative_to(LEDGER).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            offenders += [f"{path.relative_to(LEDGER)}: {n}" for n in names if n.split(".")[0] == "decisions"]
    assert offenders == []
