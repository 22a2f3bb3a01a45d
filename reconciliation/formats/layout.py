"""Reader of any other CSV through a confirmed layout (the tenant's mapping of its columns)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from reconciliation.formats.base import (
    AMOUNT_FIELDS,
    DATE_FIELDS,
    PROVIDER_TYPES,
    REASON_BAD_AMOUNT,
    REASON_BAD_CURRENCY,
    REASON_BAD_DATE,
    REASON_BAD_TYPE,
    REASON_MISSING_COLUMN,
    REASON_MISSING_VALUE,
    REASON_WRONG_COLUMNS,
    REQUIRED,
    TYPE_SYNONYMS,
    FileRefused,
    LayoutSpec,
    Parsed,
)
from reconciliation.formats.cells import amount_to_minor, currency_normalise, parse_when
from reconciliation.formats.csvtext import csv_rows, normalise_header


def _header_parts(column_header: str | list[str]) -> list[tuple[int, str]]:
    """A mapped column: one header, or for an amount a list of headers to add up, a leading
    "-" subtracting one (separate credit and debit columns: ["Credit", "-Debit"])."""
    headers = column_header if isinstance(column_header, list) else [column_header]
    parts = []
    for h in headers:
        sign, name = (-1, h[1:]) if isinstance(h, str) and h.startswith("-") else (1, h)
        parts.append((sign, name))
    return parts


def parse_with_layout(text: str | io.TextIOBase, *, kind: str, spec: LayoutSpec) -> Parsed:
    """Every row of a CSV through a confirmed layout, in canonical units."""
    header, body = csv_rows(text, spec.delimiter)
    index = {normalise_header(h): i for i, h in enumerate(header)}
    positions: dict[str, list[tuple[int, int]]] = {}
    for name, column_header in spec.columns.items():
        parts = _header_parts(column_header)
        if len(parts) > 1 and name not in AMOUNT_FIELDS:
            raise FileRefused(REASON_MISSING_COLUMN, f"only amounts can add up several columns, not {name}", line=1)
        for _, part in parts:
            if normalise_header(part) not in index:
                raise FileRefused(REASON_MISSING_COLUMN, f"column {part!r} is not in the header", line=1, column=part)
        positions[name] = [(sign, index[normalise_header(part)]) for sign, part in parts]
    missing = REQUIRED[kind] - set(positions)
    if missing:
        raise FileRefused(REASON_MISSING_COLUMN, f"the layout maps no {', '.join(sorted(missing))}", line=1)
    return Parsed(kind=kind, file_format="layout", rows=_layout_rows(header, body, kind, spec, positions))


def _layout_rows(
    header: list[str], body: Iterator[tuple[int, list[str]]], kind: str, spec: LayoutSpec,
    positions: dict[str, list[tuple[int, int]]],
) -> Iterator[dict[str, Any]]:
    width = len(header)
    single = {name: p[0][1] for name, p in positions.items() if len(p) == 1 and p[0][0] == 1}
    multi = {name: p for name, p in positions.items() if name not in single}
    previous_order = ""
    for line, cells in body:
        if len(cells) != width:
            raise FileRefused(REASON_WRONG_COLUMNS, f"{len(cells)} cells, the header has {width}", line=line)
        raw: dict[str, Any] = {name: cells[i].strip() for name, i in single.items()}
        for name, parts in multi.items():
            raw[name] = [(sign, cells[i].strip()) for sign, i in parts]
        if line_item_continuation(kind, raw, previous_order):
            continue
        previous_order = raw.get("order_id", "") if kind == "orders" else ""
        yield canonical_row(kind=kind, raw=raw, spec=spec, line=line)


def line_item_continuation(kind: str, raw: dict[str, Any], previous_order: str) -> bool:
    """A further line item of the order on the row above, as shop exports with one row per
    item write it (Shopify, WooCommerce and Magento item exports): the same order id with the
    order's total left empty. It adds nothing to the order, so it is passed over;
    a repeated id that carries a total is a row of its own and is read (and checked) as one."""
    if kind != "orders" or not previous_order or raw.get("order_id") != previous_order:
        return False
    amount = raw.get("amount")
    amount_empty = not (any(t for _, t in amount) if isinstance(amount, list) else amount)
    return amount_empty


def canonical_row(*, kind: str, raw: dict[str, Any], spec: LayoutSpec, line: int) -> dict[str, Any]:
    """One mapped row's text cells to canonical values; FileRefused names the bad cell.
    An amount mapped to several columns arrives as [(sign, text), ...] and is their sum."""
    header_of = {k: (" ".join(v) if isinstance(v, list) else v) for k, v in spec.columns.items()}
    for name in REQUIRED[kind]:
        value = raw.get(name)
        if not (any(t for _, t in value) if isinstance(value, list) else value):
            raise FileRefused(REASON_MISSING_VALUE, f"{name} is empty", line=line, column=header_of.get(name, name))
    try:
        currency = currency_normalise(raw["currency"])
    except ValueError as exc:
        raise FileRefused(REASON_BAD_CURRENCY, str(exc), line=line, column=header_of["currency"]) from exc
    row: dict[str, Any] = {"line": line, "currency": currency}
    for name, text in raw.items():
        if name in ("currency", *FX_FIELDS):
            continue
        if name in AMOUNT_FIELDS:
            parts = text if isinstance(text, list) else [(1, text)]
            try:
                row[f"{name}_minor"] = sum(
                    sign * amount_to_minor(t, currency, decimal_separator=spec.decimal_separator)
                    for sign, t in parts if t)
            except ValueError as exc:
                raise FileRefused(REASON_BAD_AMOUNT, f"{name}: {exc}", line=line, column=header_of[name]) from exc
        elif name in DATE_FIELDS:
            if not text:
                row[name] = None
                continue
            try:
                when = parse_when(text, spec.date_format)
            except ValueError as exc:
                raise FileRefused(REASON_BAD_DATE, f"{name}: {text!r} does not match {spec.date_format!r}",
                                  line=line, column=header_of[name]) from exc
            row[name] = when if name in ("ordered_at", "created_at") else when.date()
        else:
            row[name] = text
    if kind == "bank" and raw.get("original_amount"):
        row.update(_fx_cells(raw, row, spec, header_of, line))
    if kind == "provider":
        given = row.get("type", "")
        explicit = {k.strip().lower(): v for k, v in spec.values.get("type", {}).items()}
        kind_value = explicit.get(given.lower()) or TYPE_SYNONYMS.get(
            given.lower().replace(" ", "").replace("_", ""), "")
        if kind_value not in PROVIDER_TYPES:
            raise FileRefused(REASON_BAD_TYPE, f"type must be one of {', '.join(sorted(PROVIDER_TYPES))}",
                              line=line, column=header_of["type"])
        row["type"] = kind_value
        row.setdefault("fee_minor", 0)
        row.setdefault("net_minor", row["amount_minor"] - row["fee_minor"])
    return row


FX_FIELDS = ("original_amount", "original_currency", "exchange_rate")


def _fx_cells(raw: dict[str, Any], row: dict[str, Any], spec: LayoutSpec, header_of: dict[str, str],
              line: int) -> dict[str, Any]:
    """A bank line's FX columns (the amount sent, its currency, the rate into the booked
    currency) as the import stores them; nothing when the line was booked as it was sent."""
    column = header_of.get("original_currency", "original_currency")
    try:
        currency = currency_normalise(raw.get("original_currency") or "")
    except ValueError as exc:
        raise FileRefused(REASON_BAD_CURRENCY, f"original_currency: {exc}", line=line, column=column) from exc
    if currency == row["currency"]:
        return {}
    column = header_of["original_amount"]
    try:
        minor = abs(amount_to_minor(raw["original_amount"], currency, decimal_separator=spec.decimal_separator))
        column = header_of.get("exchange_rate", "exchange_rate")
        rate_text = (raw.get("exchange_rate") or "").strip()
        if spec.decimal_separator == ",":
            rate_text = rate_text.replace(".", "").replace(",", ".")
        rate = Decimal(rate_text) if rate_text else None
    except (ValueError, ArithmeticError) as exc:
        raise FileRefused(REASON_BAD_AMOUNT, f"{exc}", line=line, column=column) from exc
    if rate is not None and (not rate.is_finite() or rate <= 0 or len(rate_text) > 24):
        raise FileRefused(REASON_BAD_AMOUNT, f"exchange rate {rate_text[:24]!r} is not a positive rate", line=line,
                          column=column)
    # The sent amount takes the booked line's sign (exports often write it unsigned).
    return {"original_amount_minor": minor if row["amount_minor"] >= 0 else -minor, "original_currency": currency,
            "fx_rate": "" if rate is None else format(rate, "f")}
