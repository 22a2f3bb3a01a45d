"""BAI2 cash-management balance reports (the US banks' statement file) to canonical bank rows.

Layout: "Cash Management Balance Reporting Specifications, Version 2" (BAI, 2005; published by
the banks that issue it, e.g. bai.org and the J.P. Morgan and Wells Fargo BAI2 guides).
Records are comma-separated and end with "/": 01 file header, 02 group header (as-of date,
currency), 03 account identifier (account, currency, summary amounts), 16 transaction detail
(type code, amount, funds type, bank reference, customer reference, text), 88 continuation
of the record before it, 49 account trailer, 98 group trailer, 99 file trailer. Amounts are
unsigned whole numbers in the currency's minor unit; the detail type code says credit
(100-399, 900-919) or debit (400-699, 920-999). The trailers' control totals and record
counts are checked, so a cut or edited file is refused rather than half imported.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from reconciliation.formats.base import (
    REASON_BAD_AMOUNT,
    REASON_BAD_CURRENCY,
    REASON_BAD_DATE,
    REASON_BAD_TYPE,
    REASON_COUNT_MISMATCH,
    FileRefused,
    Parsed,
)
from reconciliation.formats.cells import currency_normalise, minor_int
from reconciliation.formats.csvtext import decode
from reconciliation.formats.registry import Reader

FILE_FORMAT = "bai2"
REASON_BAI2_INVALID = "bai2_invalid"
RECORDS = frozenset({"01", "02", "03", "16", "88", "49", "98", "99"})
NO_REFERENCE = frozenset({"", "NONREF", "NOTPROVIDED"})


def looks_like_bai2(head: str) -> bool:
    return head.lstrip("\ufeff \r\n").startswith("01,")


def _direction(code: str, line: int) -> int:
    """+1 for a credit detail type code, -1 for a debit one."""
    if not (len(code) == 3 and code.isdigit()):
        raise FileRefused(REASON_BAD_TYPE, f"type code {code!r} is not three digits", line=line, column="type code")
    number = int(code)
    if 100 <= number <= 399 or 900 <= number <= 919:
        return 1
    if 400 <= number <= 699 or 920 <= number <= 999:
        return -1
    raise FileRefused(REASON_BAD_TYPE, f"type code {code} is neither a credit nor a debit detail", line=line,
                      column="type code")


def _funds_extra(fields: list[str], at: int, line: int) -> int:
    """How many fields the funds type at `at` adds after itself: S (immediate, one-day,
    two-or-more-day amounts) 3, V (value date and time) 2, D (a count, then day/amount pairs)."""
    funds = fields[at].strip().upper() if at < len(fields) else ""
    if funds == "S":
        return 3
    if funds == "V":
        return 2
    if funds == "D":
        count = fields[at + 1].strip() if at + 1 < len(fields) else ""
        if not count.isdigit():
            raise FileRefused(REASON_BAI2_INVALID, "funds type D without its count of distributions", line=line)
        return 1 + 2 * int(count)
    return 0


def _records(text: str) -> list[tuple[int, list[str], int]]:
    """(line, fields, physical lines) per logical record: 88 continuations joined to the
    record before them. A 16's last field (its text) may itself hold commas."""
    out: list[tuple[int, list[str], int]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        body = raw.strip()
        if not body:
            continue
        code = body[:2]
        if code not in RECORDS or (len(body) > 2 and body[2] not in ",/"):
            raise FileRefused(REASON_BAI2_INVALID, f"record type {body[:2]!r} is not a BAI2 record", line=number,
                              column="record code")
        if code == "88":
            if not out:
                raise FileRefused(REASON_BAI2_INVALID, "a continuation (88) with no record before it", line=number)
            first, fields, physical = out[-1]
            more = body[3:]
            if fields[0] == "16":  # the text continues
                fields = fields[:-1] + [(fields[-1] + " " + more.rstrip("/").strip()).strip()]
            else:
                fields = fields + more.rstrip("/").split(",")
            out[-1] = (first, fields, physical + 1)
            continue
        if code == "16":
            parts = body.split(",")
            if len(parts) < 4:
                raise FileRefused(REASON_BAI2_INVALID, f"a transaction (16) has {len(parts)} of its 7 fields",
                                  line=number, column="16")
            at = 4 + _funds_extra(parts, 3, number)
            if len(parts) < at + 2:
                raise FileRefused(REASON_BAI2_INVALID, f"a transaction (16) has {len(parts)} fields, "
                                  f"{at + 3} expected", line=number, column="16")
            # Fixed fields, then bank and customer reference, then the text (commas and all).
            fields = parts[:4] + [parts[at].strip(), parts[at + 1].rstrip("/").strip(),
                                  ",".join(parts[at + 2:]).rstrip("/").strip()]
            out.append((number, fields, 1))
        else:
            out.append((number, body.rstrip("/").split(","), 1))
    return out


def _summary_total(fields: list[str], line: int) -> int:
    """The 03 record's summary amounts (type code, amount, item count, funds type, ...)."""
    total, i = 0, 3
    while i + 1 < len(fields):
        if fields[i + 1].strip():
            total += _int(fields[i + 1], line, "summary amount")
        i += 4 + _funds_extra(fields, i + 3, line) if i + 3 < len(fields) else 4
    return total


def _as_of(value: str, line: int) -> date:
    try:
        return datetime.strptime(value.strip(), "%y%m%d").date()
    except ValueError as exc:
        raise FileRefused(REASON_BAD_DATE, f"as-of date {value!r} is not YYMMDD", line=line,
                          column="as-of date") from exc


def _currency(value: str, default: str, line: int) -> str:
    try:
        return currency_normalise(value) if value.strip() else currency_normalise(default)
    except ValueError as exc:
        raise FileRefused(REASON_BAD_CURRENCY, f"{exc} (a BAI2 group or account names its currency)", line=line,
                          column="currency") from exc


def _int(value: str, line: int, column: str) -> int:
    try:
        return minor_int(value or "0")
    except ValueError as exc:
        raise FileRefused(REASON_BAD_AMOUNT, str(exc), line=line, column=column) from exc


def _control(fields: list[str], at: int, line: int, what: str) -> int:
    return _int(fields[at] if len(fields) > at else "", line, what)


def _check(name: str, stated: int, actual: int, line: int, code: str) -> None:
    if stated != actual:
        raise FileRefused(REASON_COUNT_MISMATCH, f"{name} {stated}, but the file has {actual}", line=line,
                          column=code)


def parse_bai2(text: str) -> Parsed:
    """Every 16 record of every account as a signed bank row dated with its group's as-of
    day; every trailer's control total and record count checked."""
    rows: list[dict[str, Any]] = []
    group_ccy, group_day = "", None
    account: dict[str, Any] | None = None
    totals = {"group": 0, "file": 0}
    counts = {"file": 0, "group": 0, "account": 0, "accounts": 0, "groups": 0}
    seen_end = seen_start = False
    for line, fields, physical in _records(text):
        code = fields[0]
        if seen_end:
            raise FileRefused(REASON_BAI2_INVALID, "records after the file trailer (99)", line=line)
        for scope in ("file", "group", "account"):
            counts[scope] += physical
        if code == "01":
            if seen_start:
                raise FileRefused(REASON_BAI2_INVALID, "a second file header (01)", line=line)
            seen_start = True
        elif not seen_start:
            raise FileRefused(REASON_BAI2_INVALID, "the file does not start with a file header (01)", line=line)
        elif code == "02":
            if group_day is not None or len(fields) < 5:
                raise FileRefused(REASON_BAI2_INVALID, "a group header (02) inside a group, or without its "
                                  "as-of date", line=line)
            group_day = _as_of(fields[4], line)
            group_ccy = fields[6].strip() if len(fields) > 6 else ""
            totals["group"], counts["group"], counts["accounts"] = 0, physical, 0
        elif code == "03":
            if group_day is None or account is not None:
                raise FileRefused(REASON_BAI2_INVALID, "an account (03) outside a group or inside an account",
                                  line=line)
            ccy = _currency(fields[2] if len(fields) > 2 else "", group_ccy or "USD", line)
            account = {"currency": ccy, "total": _summary_total(fields, line)}
            counts["account"] = physical
        elif code == "16":
            if account is None or group_day is None:
                raise FileRefused(REASON_BAI2_INVALID, "a transaction (16) outside an account (03)", line=line)
            sign = _direction(fields[1].strip(), line)
            amount = _int(fields[2], line, "amount")
            account["total"] += amount
            bank_reference, reference, detail = fields[4], fields[5], fields[6]
            rows.append({
                "line": line, "booking_date": group_day, "value_date": group_day,
                "amount_minor": sign * amount, "currency": account["currency"],
                "reference": "" if reference.upper() in NO_REFERENCE else reference,
                "remittance": " ".join(detail.split()),
                "bank_reference": "" if bank_reference.upper() in NO_REFERENCE else bank_reference,
            })
        elif code == "49":
            if account is None:
                raise FileRefused(REASON_BAI2_INVALID, "an account trailer (49) with no account", line=line)
            _check("account control total", _control(fields, 1, line, "account control total"), account["total"],
                   line, "49")
            _check("account record count", _control(fields, 2, line, "number of records"), counts["account"],
                   line, "49")
            totals["group"] += account["total"]
            counts["accounts"] += 1
            account = None
        elif code == "98":
            if group_day is None or account is not None:
                raise FileRefused(REASON_BAI2_INVALID, "a group trailer (98) with an account still open", line=line)
            _check("group control total", _control(fields, 1, line, "group control total"), totals["group"],
                   line, "98")
            _check("group account count", _control(fields, 2, line, "number of accounts"), counts["accounts"],
                   line, "98")
            _check("group record count", _control(fields, 3, line, "number of records"), counts["group"], line, "98")
            totals["file"] += totals["group"]
            counts["groups"] += 1
            group_day = None
        elif code == "99":
            if group_day is not None:
                raise FileRefused(REASON_BAI2_INVALID, "the file trailer (99) with a group still open", line=line)
            _check("file control total", _control(fields, 1, line, "file control total"), totals["file"], line, "99")
            _check("file group count", _control(fields, 2, line, "number of groups"), counts["groups"], line, "99")
            _check("file record count", _control(fields, 3, line, "number of records"), counts["file"], line, "99")
            seen_end = True
        else:  # an 88 first in the file is refused by _records; nothing else remains
            raise FileRefused(REASON_BAI2_INVALID, f"record {code} out of place", line=line)
    if not seen_end:
        raise FileRefused(REASON_BAI2_INVALID, "no file trailer (99): the file is cut short")
    return Parsed(kind="bank", file_format=FILE_FORMAT, rows=rows)


READER = Reader(
    file_format=FILE_FORMAT, kind="bank", order=15,
    recognises=lambda sample: looks_like_bai2(sample.head),
    read=lambda sample: parse_bai2(decode(sample.data)),
    wrong_kind="a BAI2 file imports only as kind bank",
)
