"""ACH: the 17 NACHA return codes on five decision rows, and the DEFAULT row.

Source: `facts/ach_return_codes.csv` and `facts/ach_decision_rows.json` (from the original
product's app/data/ach_return_codes.csv and app/ach_return_map.py, commit 130cb80), copied
to `rails/data/`. The only family the table states is R11's ("unauthorized", yet
correctable on row 4); the rulebook that would state the others is sold, not free, so no
other family is asserted. The reinitiation limit on R01/R09 is Nacha's (Operating Rules,
Subsection 2.12.4), as two public summaries state it: EPCOR's corporate-user guide (within
180 days after the settlement date of the original entry) and Bank Five Nine's ACH
origination guide (up to two reinitiations, three entries in all).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping
from typing import Any

from decisions.rails.base import (
    DATA_DIR,
    FALLBACK_ROW,
    Entry,
    RailTable,
    RailTableError,
    check_entries,
    load_rows,
    read_rows_json,
)

NAME = "ach"
DEFAULT_CODE = "DEFAULT"
CODE_SHAPE = re.compile(r"R[0-9]{2}")

R11_REASON = ("R11 arrives in the unauthorized family and is still correctable: our own entry "
              "was wrong, so a corrected entry may go again. It is the one code where the "
              "family and the decision disagree.")
REINITIATION = ("may be reinitiated at most two times (three entries in all), within 180 days after the "
                "settlement date of the original entry (Nacha Operating Rules, Subsection 2.12.4, "
                "Reinitiation of Returned Entries, as summarised by EPCOR and Bank Five Nine; the "
                "rulebook itself is sold, not published)")
REINITIATION_SOURCES = (
    "Nacha Operating Rules, Subsection 2.12.4 (Reinitiation of Returned Entries)",
    "EPCOR corporate-user guide: https://epcor.org/End-User/Corporate-User",
    "Bank Five Nine, reinitiating returned ACH debit items: https://www.bankfivenine.com/business/cash-management/"
    "ach-origination/ach-user-information/reinitiating-returned-ach-debit-items/",
)
# Our own words for codes whose customer needs to hear something other than their row's.
CODE_WORDING = {
    "R01": ("Your bank sent this payment back because the account did not have enough funds that day. "
            "Nothing needs to change; we will try to collect it again."),
    "R09": ("Your bank sent this payment back because part of the balance had not cleared yet. "
            "Nothing needs to change; we will try to collect it again once the funds are available."),
    "R04": "Your bank could not find an account with the number we have. Please confirm your account number.",
    "R13": ("Your bank could not find the bank routing number we have. Please confirm your account and "
            "routing numbers."),
    "R28": ("The bank routing number we have did not pass the bank's check. Please confirm your account and "
            "routing numbers."),
}


def load(csv_text: str, rows_json: Mapping[str, Any]) -> RailTable:
    """Build the ACH table, refusing an inconsistent one (RailTableError)."""
    rows = load_rows(rows_json)
    entries: list[Entry] = []
    default_row: int | None = None
    families: Mapping[str, str] = rows_json.get("FAMILY_STATED", {})
    seen: set[str] = set()
    for item in csv.DictReader(io.StringIO(csv_text)):
        code = item["code"].strip()
        row_number = int(item["decision_row"])
        if code in seen:
            raise RailTableError(f"ach: duplicate code {code}")
        seen.add(code)
        row = rows.get(row_number)
        if row is None:
            raise RailTableError(f"ach: code {code} on unknown row {row_number}")
        if (item["goes_again"], item["what_has_to_change_first"]) != (row.goes_again, row.what_has_to_change_first):
            raise RailTableError(f"ach: code {code} disagrees with row {row_number}")
        if code == DEFAULT_CODE:
            default_row = row_number
            continue
        if not CODE_SHAPE.fullmatch(code):
            raise RailTableError(f"ach: {code} is not shaped like a return code")
        special = (f"{code} {REINITIATION}",) if code in ("R01", "R09") else ()
        entries.append(Entry(
            code=code,
            row=row_number,
            reason=R11_REASON if code == "R11" else "",
            family=families.get(code),
            special_rules=special,
            customer_wording=CODE_WORDING.get(code, ""),
            sources=("NACHA return code list via facts/ach_return_codes.csv",
                     *(REINITIATION_SOURCES if special else ())),
        ))
    if default_row is None:
        raise RailTableError("ach: the DEFAULT row is missing")
    if default_row != FALLBACK_ROW:
        raise RailTableError(f"ach: DEFAULT must sit on row {FALLBACK_ROW}, not row {default_row}")
    table = check_entries(NAME, entries, rows)
    listed = {code for item in rows_json["rows"] for code in item["codes"]}
    if listed != set(table):
        raise RailTableError("ach: the decision rows and the code list disagree")
    if len(table) != int(rows_json.get("codes_listed", len(table))):
        raise RailTableError(f"ach: {len(table)} codes listed, {rows_json['codes_listed']} expected")
    for item in rows_json["rows"]:
        for code in item["codes"]:
            if table[code].row != int(item["row"]):
                raise RailTableError(
                    f"ach: {code} is on row {table[code].row} in the list, row {item['row']} in the rows"
                )
    if set(families) - set(table):
        raise RailTableError("ach: a family is stated for an unlisted code")
    return RailTable(
        name=NAME,
        title="ACH return code",
        entries=table,
        rows=rows,
        code_shape=CODE_SHAPE,
        shape_label="return code (R and two digits)",
        source_quality="scheme_code_list",
        source_note=("NACHA return codes as listed; the five decision rows are PayPilot's rule "
                     "set, not NACHA's"),
        family_unstated=str(rows_json.get("FAMILY_UNSTATED", "not stated in this table")),
    )


def build() -> RailTable:
    csv_text = (DATA_DIR / "ach_return_codes.csv").read_text(encoding="utf-8")
    return load(csv_text, read_rows_json())
