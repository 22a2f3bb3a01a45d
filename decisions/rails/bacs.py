"""Bacs: ARUDD unpaid codes, plus ADDACS and AUDDIS codes, on the five decision rows.

Source: `facts/bacs_arudd_codes.csv` (copied to `rails/data/`). No Bacs Payment Schemes
document was read for the code list: every code rests on secondary publishers that agree
with each other (the count is in `confidence`), and Bacs's own web page confirms only the
ARUDD 0 re-presentation rule. So every Bacs answer, matched or not, carries
`source_quality: "secondary_sources_only"` with the confidence of its row.

Codes repeat across reports (ARUDD 0 is not ADDACS 0), so a code is named with its report:
`ARUDD-0`, `ADDACS-C`, `AUDDIS-1` (a bare `0` means ARUDD, the unpaid-debit report).

Decided on purpose:
- The instruction-cancelled-by-the-payer codes (ARUDD 1, ADDACS 1, AUDDIS 1) sit on row 5,
  not the proposed row 3, to match their ACH analogue R07 (authorisation revoked), which is
  row 5: the payer withdrew the authority itself, so a person talks to them before any
  new instruction is sought.
- ARUDD 4 and ADDACS D (advance notice disputed) stay on row 4: the fix is to our notice,
  and the answer says no collection happens until the dispute with the payer is resolved.
"""

from __future__ import annotations

import csv
import io
import re

from decisions.rails.base import (
    DATA_DIR,
    Entry,
    RailTable,
    RailTableError,
    check_entries,
    load_rows,
    read_rows_json,
    split_sources,
)

NAME = "bacs"
REPORTS = ("ARUDD", "ADDACS", "AUDDIS")
CODE_SHAPE = re.compile(r"(ARUDD|ADDACS|AUDDIS)-[0-9A-Z]")
SOURCE_QUALITY = "secondary_sources_only"

ALIGNED_WITH_R07 = frozenset({"ARUDD-1", "ADDACS-1", "AUDDIS-1"})
R07_NOTE = ("moved to row 5 on purpose to match ACH R07 (authorisation revoked): the payer "
            "withdrew the instruction itself, so a person acts first")
_NOTICE_DISPUTE = (
    "kept on row 4: our notice is what must be put right; no collection until the payer's dispute is resolved"
)
DISPUTE_DECISIONS = {
    "ARUDD-4": _NOTICE_DISPUTE,
    "ADDACS-D": _NOTICE_DISPUTE,
}
SPECIAL_RULES = {
    "ARUDD-0": (
        "may be re-presented within one month of the original processing day, telling the payer about "
        "5 working days ahead (Bacs's own web page)",
    ),
    "ADDACS-R": (
        "reinstatement is possible up to two months after cancellation; after that a new instruction is needed",
    ),
}
_PUBLISHERS = re.compile(r"^(\d+) (?:separate publishers|sources) agree")


class BacsTable(RailTable):
    def normalize(self, code: str) -> str:
        text = code.strip().upper().replace(":", "-").replace(" ", "-")
        if "-" not in text:
            return f"ARUDD-{text}"
        return text


def load(csv_text: str) -> RailTable:
    rows = load_rows(read_rows_json())
    entries: list[Entry] = []
    for item in csv.DictReader(io.StringIO(csv_text)):
        report = item["report"].strip()
        if report not in REPORTS:
            raise RailTableError(f"bacs: unknown report {report}")
        code = f"{report}-{item['code'].strip()}"
        if not CODE_SHAPE.fullmatch(code):
            raise RailTableError(f"bacs: {code} is not a Bacs report code")
        proposed = int(item["proposed_decision_row"])
        disputed = DISPUTE_DECISIONS.get(code, "")
        row = proposed
        if code in ALIGNED_WITH_R07:
            row, disputed = 5, R07_NOTE
        elif "disputed row" in item["note"].lower() and not disputed:
            raise RailTableError(f"bacs: {code} is marked disputed but has no decision here")
        match = _PUBLISHERS.match(item["confidence"])
        if match is None:
            raise RailTableError(f"bacs: {code} states no source count")
        entries.append(Entry(
            code=code,
            row=row,
            meaning=item["meaning"],
            reason=item["decision_reason"],
            special_rules=SPECIAL_RULES.get(code, ()),
            sources=split_sources(item["source"]),
            disputed=disputed,
            extra={
                "report": report,
                "confidence": item["confidence"],
                "publishers_agreeing": int(match.group(1)),
                "note": item["note"],
            },
        ))
    table = check_entries(NAME, entries, rows)
    if not ALIGNED_WITH_R07 <= set(table):
        raise RailTableError("bacs: an instruction-cancelled code aligned with R07 is missing")
    return BacsTable(
        name=NAME,
        title="Bacs ARUDD/ADDACS/AUDDIS code",
        entries=table,
        rows=rows,
        code_shape=CODE_SHAPE,
        shape_label="Bacs code (REPORT-CODE, e.g. ARUDD-0)",
        source_quality=SOURCE_QUALITY,
        source_note=("consistent secondary publishers only; no Bacs Payment Schemes document was "
                     "read for the code list"),
        family_unstated="Bacs codes carry no family beyond the report they arrive in",
    )


def build() -> RailTable:
    return load((DATA_DIR / "bacs_arudd_codes.csv").read_text(encoding="utf-8"))
