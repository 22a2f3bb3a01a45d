"""The demo tenant's six customers, loaded from `ledger/fixtures/demo_customers.csv`.

That CSV is a verbatim copy of `shared/facts/demo_customers.csv` (invented companies with
invented payment histories); it is copied so the project runs without ../shared.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ledger.money import currency_normalise, to_minor

DEMO_CUSTOMERS_CSV = Path(__file__).resolve().parent / "fixtures" / "demo_customers.csv"
HISTORY_COLUMN = "payment_history(date status failure_code)"

_SINGLE = re.compile(r"^(\d{4}-\d{2}-\d{2}) (ok|failed)(?: (\w+))?$")
_RANGE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.\.(\d{4}-\d{2}-\d{2}) (ok|failed) x(\d+)$")


@dataclass(frozen=True)
class DemoCustomer:
    external_id: str
    name: str
    email: str
    plan: str
    mrr_minor: int
    currency: str
    payment_history: list[dict[str, Any]]


def _add_months(day: date, months: int) -> date:
    month = day.month - 1 + months
    return day.replace(year=day.year + month // 12, month=month % 12 + 1)


def payment_history_parse(text: str) -> list[dict[str, Any]]:
    """`2026-03-15 ok;2026-06-15 failed card_expired` -> entries, oldest first. A range
    `2026-02-20..2026-05-20 ok x4` expands to four monthly entries. Raises ValueError."""
    entries: list[dict[str, Any]] = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        if match := _SINGLE.match(part):
            entry: dict[str, Any] = {"date": match[1], "status": match[2]}
            if match[3]:
                entry["failure_code"] = match[3]
            entries.append(entry)
        elif match := _RANGE.match(part):
            start, end, count = date.fromisoformat(match[1]), date.fromisoformat(match[2]), int(match[4])
            days = [_add_months(start, i) for i in range(count)]
            if days[-1] != end:
                raise ValueError("history range does not step monthly to its end date")
            entries.extend({"date": d.isoformat(), "status": match[3]} for d in days)
        else:
            raise ValueError("unreadable payment history entry")
    return entries


def demo_customers(path: Path = DEMO_CUSTOMERS_CSV) -> list[DemoCustomer]:
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [
        DemoCustomer(
            external_id=row["id"],
            name=row["name"],
            email=row["email"],
            plan=row["plan"],
            mrr_minor=to_minor(row["mrr"], row["currency"]),
            currency=currency_normalise(row["currency"]),
            payment_history=payment_history_parse(row[HISTORY_COLUMN]),
        )
        for row in rows
    ]
