"""SEPA Direct Debit: R-transaction reason codes on the five decision rows.

Source: `facts/sepa_reason_codes.csv` (copied to `rails/data/`): meanings, R-transaction
types, who initiates, the proposed row with its reason, source keys (EPC guidance via the
processors that follow it, the ISO 20022 external code sets; keys explained in
`facts/README.md`) and special rules. One payment processor's chargeback guide that the
facts also cite for MD06's 8-week rule is left out of the copy, because this app names no
payment provider; two other sources state the same rule.

The rows the facts mark as disputed are decided here, and the decision travels with the
answer (`disputed`):
- AC06 stays on row 5. The code does not say whose block it is; row 3 would wait for a
  payer who may never have blocked anything, so a person finds out first.
- ED05 stays on row 5. No source states a retry rule for a settlement failure, and an
  automatic resubmission could collect twice; a person checks with the bank.
- MS03 stays on row 1, but once only. Re-presenting it is the published practice, yet it
  can hide a closed account or a death, so a second MS03 on the same debit is row 5.
- FOCR stays on row 4 and is marked as not an SDD failure reason: it answers our own
  cancellation request, so only a corrected new entry would go again.
- CUST stays on row 3. Sources disagree on who asked, but either way the collection was
  stopped on request, and nothing is collected until someone asks again.
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

NAME = "sepa"
CODE_SHAPE = re.compile(r"[A-Z0-9]{4}")
CANCELLATION_CODES = frozenset({"DUPL", "TECH", "FRAD", "CUST", "FOCR"})

DISPUTED_DECISIONS: dict[str, tuple[int, str]] = {
    "AC06": (5, "kept on row 5: the code does not say whose block it is, so a person finds out first"),
    "ED05": (5, "kept on row 5: no published retry rule, and a blind resubmission could collect twice"),
    "MS03": (1, "kept on row 1 once only: it can mask a closed account or a death, so a second MS03 is row 5"),
    "FOCR": (4, "kept on row 4: it answers our own cancellation request and is not an SDD failure reason"),
    "CUST": (3, "kept on row 3: sources disagree on who asked, but the collection was stopped on request"),
}

SPECIAL_RULES: dict[str, tuple[str, ...]] = {
    "MD06": (
        "SDD Core only: the payer may claim a refund of an authorised debit within 8 weeks of the debit "
        "date, no reason needed; SDD B2B has no such right",
    ),
    "MD01": ("an unauthorised-transaction refund can be claimed up to 13 months after the debit",),
    "AM04": ("may be re-presented as a new collection",),
    "MS03": (
        "may be re-presented once; it can mask AC04, AM04, MD07 or RR01-RR04 where national law forbids "
        "the specific code",
    ),
}


def load(csv_text: str) -> RailTable:
    rows = load_rows(read_rows_json())
    entries: list[Entry] = []
    for item in csv.DictReader(io.StringIO(csv_text)):
        code = item["code"].strip()
        if not CODE_SHAPE.fullmatch(code):
            raise RailTableError(f"sepa: {code} is not a four-character reason code")
        proposed = int(item["proposed_decision_row"])
        note = item["note"]
        disputed = ""
        if code in DISPUTED_DECISIONS:
            row, disputed = DISPUTED_DECISIONS[code]
        elif "disputed" in note.lower():
            raise RailTableError(f"sepa: {code} is marked disputed but has no decision here")
        else:
            row = proposed
        kind = "cancellation" if code in CANCELLATION_CODES else "failure"
        entries.append(Entry(
            code=code,
            row=row,
            meaning=item["meaning"],
            reason=item["decision_reason"],
            special_rules=SPECIAL_RULES.get(code, ()),
            sources=split_sources(item["source"]),
            disputed=disputed,
            extra={
                "r_transaction_types": [t for t in item["r_transaction_types"].split("|") if t],
                "who_initiates": item["who_initiates"],
                "kind": kind,
                "note": note,
            },
        ))
    table = check_entries(NAME, entries, rows)
    missing = set(SPECIAL_RULES) - set(table)
    if missing:
        raise RailTableError(f"sepa: special rules for unlisted codes {sorted(missing)}")
    return RailTable(
        name=NAME,
        title="SEPA Direct Debit reason code",
        entries=table,
        rows=rows,
        code_shape=CODE_SHAPE,
        shape_label="SEPA reason code (four letters or digits)",
        source_quality="scheme_guidance_via_processors",
        source_note=("EPC173-14 guidance as followed by processors' published lists, and the ISO "
                     "20022 external code sets; the EPC PDF itself was not read"),
        family_unstated="SEPA reason codes carry no family beyond their R-transaction types",
    )


def build() -> RailTable:
    return load((DATA_DIR / "sepa_reason_codes.csv").read_text(encoding="utf-8"))
