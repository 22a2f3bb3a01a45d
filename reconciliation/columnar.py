"""Column-at-a-time reading of large CSV exports with polars: the fast path of an import.

The row parsers in `reconciliation.formats` are the reference. `stripe_columns` and
`layout_columns` return a file's canonical columns exactly as the row parser would produce
them, or None whenever the file holds anything this vectorised grammar does not cover
(a blank line, a stray quote, a ragged row, an empty required cell, a bad amount or date,
a value too long). The caller then reads the file with the row parser, which imports the
same rows or refuses the file naming the first bad line, column and reason: the fast path
never refuses a file and never decides a value differently. Cells outside the strict
grammar but still valid ("1.234,56", a date with an offset) go one by one through the row
parser's own functions (`amount_to_minor`, `parse_when`); values that repeat (currencies,
types, statuses) are converted once per distinct value by the same functions.

Times are carried as Int64 microseconds since 1970-01-01 UTC, dates as Int32 day numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

import polars as pl

from reconciliation.formats.base import (
    AMOUNT_FIELDS,
    PROVIDER_TYPES,
    REQUIRED,
    TYPE_SYNONYMS,
    LayoutSpec,
)
from reconciliation.formats.cells import _exponent, _fixed_width, amount_to_minor, currency_normalise, parse_when
from reconciliation.formats.csvtext import normalise_header
from reconciliation.formats.layout import _header_parts
from reconciliation.formats.stripe_report import STRIPE_CATEGORIES, is_stripe_report

Columns = dict[str, pl.Series]

# What Python's str.strip() removes (str.isspace), so a polars strip is the same strip.
PY_WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                 "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
US_PER_DAY = 86_400_000_000
_EPOCH_DT = datetime(1970, 1, 1, tzinfo=UTC)
_POW10 = {i: 10**i for i in range(10)}


class _Decline(Exception):
    """The fast grammar does not cover this file: read it with the row parser."""


# --- cells ---------------------------------------------------------------------------------

def read_cells(data: bytes, delimiter: str) -> tuple[list[str], pl.DataFrame] | None:
    """The header and the body's cells as strings, exactly as `formats.csv_rows` reads them
    (csv module, blank lines skipped, line number = row index + 2), or None when the file
    is not plain enough to be sure of that: NUL bytes, a lone CR, a malformed or multi-line
    quoted field, a blank or ragged line, a multi-byte delimiter, invalid UTF-8."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    sep = delimiter.encode()
    if len(sep) != 1 or sep in b'"\r\n' or not data or b"\x00" in data or (
            b"\r" in data and data.count(b"\r") != data.count(b"\r\n")):  # two counts only if any CR
        return None
    skeleton = data
    if b'"' in data:
        # A quoted field must span a whole cell; remove those and no quote may remain
        # (the csv module and polars differ on stray quotes, e.g. `ab"c` or `"ab"c`).
        quoted = re.compile(rb'(?<![^' + re.escape(sep) + rb'\n])"(?:[^"]|"")*"(?=[' + re.escape(sep)
                            + rb'\r\n]|\Z)')
        skeleton = quoted.sub(b"", data)
        if b'"' in skeleton:
            return None
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    # polars refuses a line with more cells than the header, except the last one when no
    # newline ends it (it drops the extra cells): end it, so the count check below sees
    # every line with too many delimiters refused and therefore none with too few.
    parsed = data if data.endswith(b"\n") else data + b"\n"
    try:
        frame = pl.read_csv(parsed, has_header=False, separator=delimiter, infer_schema=False,
                            empty_string_is_null=False, quote_char='"', encoding="utf8", raise_if_empty=True,
                            comment_prefix=None)
    except Exception:  # noqa: BLE001 - any complaint of the reader means "use the row parser"
        return None
    width = frame.width
    # Every physical line is one record with exactly width - 1 delimiters (quoted ones
    # removed above): no blank line, no short row, no newline inside a quoted cell. (A short
    # row is padded by polars; with no line longer than the header, the total delimiter
    # count equals (width - 1) x lines only if no line is short either.)
    if width < 2 or frame.height != lines or skeleton.count(sep) != (width - 1) * lines:
        return None
    if frame.null_count().sum_horizontal().item():
        return None
    header = list(frame.row(0))
    body = frame.slice(1)
    body.columns = [f"c{i}" for i in range(width)]
    if body.height and _strip(body["c0"]).eq("").any() and body.select(
            pl.concat_str(pl.all()).str.strip_chars(PY_WHITESPACE).eq("").any()).item():
        return None  # a line of empty cells: the csv reader skips it, so line numbers shift
    return header, body


def _strip(series: pl.Series) -> pl.Series:
    return series.str.strip_chars(PY_WHITESPACE)


def _per_value(series: pl.Series, convert: Callable[[str], Any], dtype: pl.DataType) -> pl.Series:
    """`convert` once per distinct value (currencies, types, statuses); _Decline on ValueError."""
    mapping: dict[str, Any] = {}
    for value in series.unique().to_list():
        try:
            mapping[value] = convert(value)
        except ValueError as exc:
            raise _Decline from exc
    return series.replace_strict(mapping, return_dtype=dtype)


def _exponents(currency: pl.Series) -> pl.Series:
    return _per_value(currency, _exponent, pl.Int64())


def _amounts(cells: pl.Series, currency: pl.Series, separator: str) -> pl.Series:
    """Stripped, non-empty amount cells to minor units, as `amount_to_minor` gives them."""
    pattern = rf"^-?[0-9]{{1,13}}(?:{re.escape(separator)}[0-9]{{1,4}})?$"
    # "-217.22" -> the integer -21722 scaled by 10^(exponent - decimals written).
    parts = pl.DataFrame({"c": cells, "e": _exponents(currency)}).select(
        ok=pl.col("c").str.contains(pattern),
        pos=pl.col("c").str.find(separator, literal=True),
        n=pl.col("c").str.len_bytes().cast(pl.Int64),
        digits=pl.col("c").str.replace(separator, "", literal=True).cast(pl.Int64, strict=False),
        e=pl.col("e"),
    )
    decimals = pl.when(pl.col("pos").is_null()).then(0).otherwise(pl.col("n") - pl.col("pos") - 1)
    out = parts.select(
        ok=(pl.col("ok") & (decimals <= pl.col("e"))).fill_null(False),
        value=pl.col("digits") * (pl.col("e") - decimals).clip(0, 9).replace_strict(_POW10, return_dtype=pl.Int64),
    )
    ok = out["ok"]
    value = out["value"]
    if not ok.all():
        # Thousands separators, brackets, a trailing minus...: the row parser's function.
        idx = ok.not_().arg_true()
        extra = []
        for text, ccy in zip(cells.gather(idx).to_list(), currency.gather(idx).to_list(), strict=True):
            try:
                minor = amount_to_minor(text, ccy, decimal_separator=separator)
            except ValueError as exc:
                raise _Decline from exc
            if not -(2**63) <= minor < 2**63:
                raise _Decline  # beyond a BIGINT: the row path reports it
            extra.append(minor)
        value = value.scatter(idx, pl.Series(extra, dtype=pl.Int64))
    return value


def _date_grammar(date_format: str) -> tuple[str, dict[str, tuple[int, int]]] | None:
    """A regex of a fixed-width format ("%d/%m/%Y %H:%M") and each field's (offset, width)."""
    if date_format == "iso":
        return _ISO
    fixed = _fixed_width(date_format)
    if fixed is None:
        return None
    _, fields, literals = fixed
    pieces: list[tuple[int, str]] = [(a, f"[0-9]{{{b - a}}}") for _, a, b in fields]
    pieces += [(pos, re.escape(char)) for pos, char in literals]
    return "^" + "".join(p for _, p in sorted(pieces)) + "$", {name: (a, b - a) for name, a, b in fields}


_ISO = (r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(?:Z|\+00:00)?$",
        {"year": (0, 4), "month": (5, 2), "day": (8, 2), "hour": (11, 2), "minute": (14, 2), "second": (17, 2)})


def _when(cells: pl.Series, date_format: str) -> pl.Series:
    """Stripped, non-empty date cells to microseconds since the epoch (UTC), as
    `parse_when` reads them."""
    grammar = _date_grammar(date_format)
    if grammar is None:
        ok = pl.Series([False] * len(cells))
        us = pl.Series([0] * len(cells), dtype=pl.Int64)
    else:
        pattern, slices = grammar
        names = ("year", "month", "day", "hour", "minute", "second")
        parts = pl.DataFrame({"c": cells}).select(
            ok=pl.col("c").str.contains(pattern),
            **{name: (pl.col("c").str.slice(*slices[name]).cast(pl.Int64, strict=False) if name in slices
                      else pl.lit(0, dtype=pl.Int64)) for name in names})
        y, m, d, hh, mm, ss = (pl.col(name) for name in names)
        leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
        month_days = pl.when(m == 2).then(pl.when(leap).then(29).otherwise(28)).when(
            m.is_in([4, 6, 9, 11])).then(30).otherwise(31)
        # days_from_civil (H. Hinnant): proleptic Gregorian date -> days since 1970-01-01.
        yy = y - (m <= 2).cast(pl.Int64)
        era = yy // 400
        yoe = yy - era * 400
        doy = (153 * (m + pl.when(m > 2).then(-3).otherwise(9)) + 2) // 5 + d - 1
        days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
        frame = parts.select(
            ok=(pl.col("ok") & (y >= 1000) & m.is_between(1, 12) & d.is_between(1, month_days) & (hh <= 23)
                & (mm <= 59) & (ss <= 59)).fill_null(False),
            us=(days * 86400 + hh * 3600 + mm * 60 + ss) * 1_000_000,
        )
        ok, us = frame["ok"], frame["us"]
    if not ok.all():
        # Other spellings (an offset, no zero padding): the row parser's function, once per
        # distinct cell (dates repeat).
        idx = ok.not_().arg_true()
        odd = cells.gather(idx)
        mapping: dict[str, int] = {}
        for text in odd.unique().to_list():
            try:
                when = parse_when(text, date_format)
            except ValueError as exc:
                raise _Decline from exc
            if when.microsecond or when.year < 1000:
                raise _Decline  # stored with fractions / padded years: leave to the row path
            mapping[text] = (when - _EPOCH_DT) // _MICRO
        us = us.fill_null(0).scatter(idx, odd.replace_strict(mapping, return_dtype=pl.Int64))
    return us


_MICRO = datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - _EPOCH_DT


def _optional_when(cells: pl.Series, date_format: str) -> pl.Series:
    """Like `_when`, with "" as null."""
    empty = cells.eq("")
    if empty.all():
        return pl.Series([None] * len(cells), dtype=pl.Int64)
    us = _when(cells.set(empty, _first_nonempty(cells)), date_format)
    return us.set(empty, None)  # type: ignore[arg-type]


def _first_nonempty(cells: pl.Series) -> str:
    return cells.filter(cells.ne("")).item(0)


def _day(us: pl.Series) -> pl.Series:
    return (us // US_PER_DAY).cast(pl.Int32)


def _lower(series: pl.Series) -> pl.Series:
    return _per_value(series, str.lower, pl.String())


# --- Stripe itemized report ----------------------------------------------------------------

def stripe_columns(data: bytes) -> Columns | None:
    """Provider columns of a Stripe itemized report, or None (use `parse_stripe_report`)."""
    cells = read_cells(data, ",")
    if cells is None or not is_stripe_report(cells[0]) or not cells[1].height:
        return None  # (a header alone: nothing to vectorise; the row parser reads no rows)
    header, body = cells
    try:
        return _stripe(header, body)
    except _Decline:
        return None


def _stripe(header: list[str], body: pl.DataFrame) -> Columns:
    index = {normalise_header(h): i for i, h in enumerate(header)}

    def col(name: str) -> pl.Series:
        i = index.get(name, -1)
        return _strip(body[f"c{i}"]) if i >= 0 else pl.Series([""] * body.height, dtype=pl.String)

    currency = _per_value(body[f"c{index['currency']}"], currency_normalise, pl.String())
    kind = _per_value(col("reporting_category"), lambda v: STRIPE_CATEGORIES.get(v, "adjustment"), pl.String())
    created = _when(col("created_utc"), "iso")
    amounts = []
    for name in ("gross", "fee", "net"):
        raw = body[f"c{index[name]}"]
        # `amount_to_minor(cell or "0")`: an empty cell is 0, a blank one is refused.
        amounts.append(_amounts(_strip(raw.set(raw.eq(""), "0")), currency, "."))
    payout_us = _optional_when(col("automatic_payout_effective_at_utc"), "iso")
    payout_day = _day(payout_us)
    # A payout row without a payout date is dated by its own creation.
    payout_day = payout_day.zip_with(~(kind.eq("payout") & payout_day.is_null()), _day(created))
    source = col("source_id")
    charge = col("charge_id")
    charge = charge.zip_with(charge.ne("") | kind.ne("charge"), source)
    payout = col("automatic_payout_id")
    payout = payout.zip_with(payout.ne("") | kind.ne("payout"), source)
    meta_order = col("payment_metadata[order_id]")
    order_reference = meta_order.zip_with(meta_order.ne(""), col("order_id"))
    transaction_id = col("balance_transaction_id")
    if transaction_id.eq("").any():
        raise _Decline
    return {
        "line": pl.Series(range(2, body.height + 2), dtype=pl.Int64),
        "transaction_id": transaction_id,
        "created_at": created,
        "created_day": _day(created),
        "type": kind,
        "amount_minor": amounts[0],
        "fee_minor": amounts[1],
        "net_minor": amounts[2],
        "currency": currency,
        "charge_id": charge,
        "order_reference": order_reference,
        "payout_id": payout,
        "payout_date": payout_day,
        "payout_day": payout_day,
    }


# --- confirmed layouts ---------------------------------------------------------------------

def layout_columns(data: bytes, *, kind: str, spec: LayoutSpec) -> Columns | None:
    """Canonical columns of a CSV through a confirmed layout, or None (use `parse_with_layout`)."""
    cells = read_cells(data, spec.delimiter)
    if cells is None or not cells[1].height:
        return None
    header, body = cells
    try:
        return _layout(header, body, kind, spec)
    except _Decline:
        return None


def _layout(header: list[str], body: pl.DataFrame, kind: str, spec: LayoutSpec) -> Columns:
    index = {normalise_header(h): i for i, h in enumerate(header)}
    raw: dict[str, list[tuple[int, pl.Series]]] = {}
    for name, column_header in spec.columns.items():
        parts = _header_parts(column_header)
        if (len(parts) > 1 and name not in AMOUNT_FIELDS) or any(normalise_header(p) not in index for _, p in parts):
            raise _Decline
        raw[name] = [(sign, _strip(body[f"c{index[normalise_header(p)]}"])) for sign, p in parts]
    if REQUIRED[kind] - set(raw):
        raise _Decline
    for name in REQUIRED[kind]:
        present = raw[name][0][1].ne("")
        for _, cells in raw[name][1:]:
            present = present | cells.ne("")
        if not present.all():
            raise _Decline  # the row parser names the first empty required cell
    n = body.height
    currency = _per_value(raw["currency"][0][1], currency_normalise, pl.String())

    def text(name: str) -> pl.Series:
        return raw[name][0][1] if name in raw else pl.Series([""] * n, dtype=pl.String)

    def amount(name: str) -> pl.Series | None:
        if name not in raw:
            return None
        total = pl.Series([0] * n, dtype=pl.Int64)
        for sign, cells in raw[name]:
            empty = cells.eq("")
            if empty.all():
                continue
            values = _amounts(cells.set(empty, "0"), currency, spec.decimal_separator)
            total = total + sign * values.set(empty, 0)
        return total

    def when(name: str) -> pl.Series:
        if name not in raw:
            return pl.Series([None] * n, dtype=pl.Int64)
        return _optional_when(raw[name][0][1], spec.date_format)

    line = pl.Series(range(2, n + 2), dtype=pl.Int64)
    amount_minor = amount("amount")
    assert amount_minor is not None  # required
    if kind == "orders":
        ordered = when("ordered_at")
        email = text("customer_email")
        return {
            "line": line, "order_id": text("order_id"), "ordered_at": ordered, "ordered_day": _day(ordered),
            "amount_minor": amount_minor, "currency": currency, "payment_reference": text("payment_reference"),
            "customer_email_hash": _per_value(email, _email_hash, pl.String()),
            "status": _lower(text("status")),
        }
    if kind == "provider":
        explicit = {k.strip().lower(): v for k, v in spec.values.get("type", {}).items()}

        def provider_type(given: str) -> str:
            folded = given.lower()
            value = explicit.get(folded) or TYPE_SYNONYMS.get(folded.replace(" ", "").replace("_", ""), "")
            if value not in PROVIDER_TYPES:
                raise ValueError(given)
            return value

        created = when("created_at")
        fee = amount("fee")
        fee = fee if fee is not None else pl.Series([0] * n, dtype=pl.Int64)
        net = amount("net")
        payout = when("payout_date")
        return {
            "line": line, "transaction_id": text("transaction_id"), "created_at": created,
            "created_day": _day(created), "type": _per_value(text("type"), provider_type, pl.String()),
            "amount_minor": amount_minor, "fee_minor": fee, "net_minor": net if net is not None else amount_minor - fee,
            "currency": currency, "charge_id": text("charge_id"), "order_reference": text("order_reference"),
            "payout_id": text("payout_id"), "payout_date": _day(payout), "payout_day": _day(payout),
        }
    if kind == "bank":
        if "original_amount" in raw:
            raise _Decline  # FX columns (a few lines of a bank export): the row reader checks each
        booking = _day(when("booking_date"))
        return {
            "line": line, "booking_date": booking, "booking_day": booking, "value_date": _day(when("value_date")),
            "amount_minor": amount_minor, "currency": currency, "reference": text("reference"),
            "remittance": text("remittance"), "bank_reference": text("bank_reference"),
            "original_amount_minor": pl.Series([None] * n, dtype=pl.Int64),
            "original_currency": pl.Series([""] * n, dtype=pl.String), "fx_rate": pl.Series([""] * n, dtype=pl.String),
        }
    return {
        "line": line, "dispute_id": text("dispute_id"), "charge_id": text("charge_id"), "amount_minor": amount_minor,
        "currency": currency, "reason": _lower(text("reason")), "status": _lower(text("status")),
        "evidence_due_by": _day(when("evidence_due_by")), "created_at": when("created_at"),
    }


def _email_hash(email: str) -> str:
    from paypilot.services import pii_hash

    return pii_hash(email.lower()) if email else ""


def day_to_date(day: int) -> date:
    return date.fromordinal(day + 719163)
