"""The bank-rail registry: callers ask it by name and never import a rail module.

Each rail is built (and its table checked) once, on first use; an inconsistent table
raises `RailTableError` instead of answering.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from decisions.rails import ach, bacs, sepa
from decisions.rails.base import RailTable, RailTableError

__all__ = ["RAILS", "RailTable", "RailTableError", "UnknownRail", "explain", "list_decisions",
           "lookup", "rail_get"]

_BUILDERS: dict[str, Callable[[], RailTable]] = {
    ach.NAME: ach.build,
    sepa.NAME: sepa.build,
    bacs.NAME: bacs.build,
}
RAILS: tuple[str, ...] = tuple(_BUILDERS)


class UnknownRail(LookupError):
    """No rail of that name is registered."""


@cache
def rail_get(name: str) -> RailTable:
    builder = _BUILDERS.get(name.strip().lower())
    if builder is None:
        raise UnknownRail(f"unknown rail {name!r}; registered: {', '.join(RAILS)}")
    return builder()


def lookup(code: str, rail: str = "ach") -> dict[str, Any]:
    return rail_get(rail).lookup(code)


def list_decisions(rail: str = "ach") -> dict[str, Any]:
    return rail_get(rail).list_decisions()


def explain(code: str, rail: str = "ach") -> dict[str, Any]:
    return rail_get(rail).explain(code)
