"""What every bank rail shares: the five decision rows, one answer shape, the fall-through.

The five rows come from `facts/ach_decision_rows.json` (copied to `rails/data/`); they
answer one question for any rail: what has to change before this debit can exist again.
Row 5 is where anything unlisted lands, and "a person acts first" is derived from it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"
FALLBACK_ROW = 5


class RailTableError(ValueError):
    """A rail's table is inconsistent; the rail refuses to load rather than answer from it."""


@dataclass(frozen=True)
class DecisionRow:
    row: int
    goes_again: str
    what_has_to_change_first: str
    person_acts_first: bool
    customer_wording: str


# Our own words for the customer, one per row.
CUSTOMER_WORDING: Mapping[int, str] = {
    1: "Your bank sent this payment back, but nothing needs to change on your side; it will be collected again.",
    2: "Your bank could not take the payment from the account we have. Please give us updated account details.",
    3: "The payment was stopped on your instruction. Nothing more will be collected until you tell us to go ahead.",
    4: "The payment came back because of a mistake on our side. We will correct it; you do not need to do anything.",
    5: "This payment could not be collected. A member of our team will contact you before anything else happens.",
}


def load_rows(raw: Mapping[str, Any]) -> dict[int, DecisionRow]:
    """The five rows, checked: numbered 1..5, person-first exactly on the fallback row."""
    rows: dict[int, DecisionRow] = {}
    person_rows = set(raw.get("PERSON_REQUIRED_ROWS", []))
    if person_rows != {FALLBACK_ROW}:
        raise RailTableError("only the fallback row (5) may require a person to act first")
    for item in raw["rows"]:
        number = int(item["row"])
        if number in rows:
            raise RailTableError(f"decision row {number} appears twice")
        person = number in person_rows
        if bool(item.get("person_acts_first")) != person:
            raise RailTableError(f"decision row {number}: person_acts_first disagrees with PERSON_REQUIRED_ROWS")
        rows[number] = DecisionRow(row=number, goes_again=item["goes_again"],
                                   what_has_to_change_first=item["what_has_to_change_first"],
                                   person_acts_first=person, customer_wording=CUSTOMER_WORDING[number])
    if sorted(rows) != [1, 2, 3, 4, 5]:
        raise RailTableError(f"decision rows must be 1..5, got {sorted(rows)}")
    return rows


def read_rows_json() -> dict[str, Any]:
    with open(DATA_DIR / "ach_decision_rows.json", encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


@dataclass(frozen=True)
class Entry:
    """One listed code on one rail."""

    code: str
    row: int
    meaning: str = ""
    reason: str = ""  # why this code sits on this row
    family: str | None = None  # only where the source states it
    special_rules: tuple[str, ...] = ()
    customer_wording: str = ""  # this code's own words for the customer; else its row's
    sources: tuple[str, ...] = ()
    disputed: str = ""  # how the disputed proposal was decided, and why
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RailTable:
    """A loaded rail: its entries, the shared rows and how it describes its sources."""

    name: str
    title: str
    entries: Mapping[str, Entry]
    rows: Mapping[int, DecisionRow]
    code_shape: re.Pattern[str]
    shape_label: str
    source_quality: str
    source_note: str
    family_unstated: str

    def normalize(self, code: str) -> str:
        return code.strip().upper()

    def lookup(self, code: str) -> dict[str, Any]:
        """The answer for one code, in the shape every rail shares. Never null, never row 1
        for an unlisted code."""
        key = self.normalize(code)
        entry = self.entries.get(key)
        if entry is None:
            return self._fell_through(key)
        row = self.rows[entry.row]
        return self._answer(key, row, matched=True, entry=entry,
                            reason=f"matched: {key} is listed on row {row.row}. {entry.reason}".strip())

    def _fell_through(self, key: str) -> dict[str, Any]:
        shaped = bool(self.code_shape.fullmatch(key))
        shape = (f"it is shaped like a {self.shape_label}" if shaped
                 else f"it is not shaped like a {self.shape_label}")
        reason = (f"fell through: {key or '(empty)'} is not listed in the {self.title} table and {shape}; "
                  f"it lands on row {FALLBACK_ROW}, where nothing automatic happens")
        answer = self._answer(key, self.rows[FALLBACK_ROW], matched=False, entry=None, reason=reason)
        answer["code_shaped"] = shaped
        return answer

    def _answer(self, key: str, row: DecisionRow, *, matched: bool, entry: Entry | None,
                reason: str) -> dict[str, Any]:
        family = entry.family if entry else None
        answer: dict[str, Any] = {
            "rail": self.name,
            "code": key,
            "matched": matched,
            "row": row.row,
            "goes_again": row.goes_again,
            "what_has_to_change_first": row.what_has_to_change_first,
            "person_acts_first": row.person_acts_first,
            "customer_wording": (entry.customer_wording if entry else "") or row.customer_wording,
            "meaning": entry.meaning if entry else "",
            "reason": reason,
            "family": family,
            "family_stated": family is not None,
            "special_rules": list(entry.special_rules) if entry else [],
            "disputed": entry.disputed if entry else "",
            "sources": list(entry.sources) if entry else [],
            "source_quality": self.source_quality,
        }
        if entry is not None:
            answer.update(entry.extra)
        return answer

    def list_decisions(self) -> dict[str, Any]:
        by_row: dict[int, list[str]] = {n: [] for n in self.rows}
        for entry in self.entries.values():
            by_row[entry.row].append(entry.code)
        return {
            "rail": self.name,
            "title": self.title,
            "source_quality": self.source_quality,
            "source_note": self.source_note,
            "fallback_row": FALLBACK_ROW,
            "rows": [
                {
                    "row": row.row,
                    "goes_again": row.goes_again,
                    "what_has_to_change_first": row.what_has_to_change_first,
                    "person_acts_first": row.person_acts_first,
                    "customer_wording": row.customer_wording,
                    "codes": by_row[row.row],
                }
                for row in sorted(self.rows.values(), key=lambda r: r.row)
            ],
        }

    def explain(self, code: str) -> dict[str, Any]:
        answer = self.lookup(code)
        family_text = (
            f"the table states {answer['code']}'s family: {answer['family']}"
            if answer["family_stated"] else f"family: {self.family_unstated}"
        )
        return {
            **answer,
            "why": answer["reason"],
            "family_statement": family_text,
            "what_the_table_does_not_state": self.family_unstated,
        }


def check_entries(name: str, entries: list[Entry], rows: Mapping[int, DecisionRow]) -> dict[str, Entry]:
    """Refuse duplicates and rows outside 1..5."""
    out: dict[str, Entry] = {}
    for entry in entries:
        if entry.code in out:
            raise RailTableError(f"{name}: duplicate code {entry.code}")
        if entry.row not in rows:
            raise RailTableError(f"{name}: code {entry.code} on unknown row {entry.row}")
        out[entry.code] = entry
    return out


def split_sources(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(";") if part.strip())
