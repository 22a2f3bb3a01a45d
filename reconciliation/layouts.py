"""Deterministic layout suggestion: header synonyms (en/de/fr/es) plus content sniffing.

`layout_suggest()` reads only the file: which header is which canonical field, the date
format (a day-first/month-first ambiguity is reported, never guessed), the decimal
separator and the delimiter, with a preview of converted rows. No model is consulted here;
`reconciliation.layout_model` asks one, when switched on, and merges its checked answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from reconciliation.formats import (
    CANONICAL,
    DATE_FIELDS,
    REQUIRED,
    FileRefused,
    LayoutSpec,
    canonical_row,
    csv_rows,
    normalise_header,
    sniff_delimiter,
)
from reconciliation.formats.layout import line_item_continuation
from reconciliation.shop_headers import ORDER_HEADERS

PREVIEW_ROWS = 5
SNIFF_ROWS = 200

# Header synonyms, normalised (lower case, single spaces). English, German, French, Spanish.
SYNONYMS: dict[str, dict[str, tuple[str, ...]]] = {
    "orders": {  # the shop platforms' own headers first (`shop_headers`), then generic words
        name: tuple(dict.fromkeys(ORDER_HEADERS.get(name, ()) + generic)) for name, generic in {
            "order_id": ("order_id", "order", "bestellnummer", "bestellung", "commande", "pedido", "id pedido"),
            "ordered_at": ("ordered_at",),
            "amount": ("amount",),
            "currency": (),
            "payment_reference": ("payment_reference",),
            "customer_email": (),
            "status": (),
        }.items()
    },
    "provider": {
        "transaction_id": ("transaction_id", "transaction id", "id", "psp reference", "pspreference",
                           "transaktions-id", "référence", "id de transacción"),
        "created_at": ("created_at", "created", "date", "creation date", "booking date", "datum",
                       "date de création", "fecha", "fecha de creación"),
        "type": ("type", "record type", "journal type", "typ", "buchungstyp", "type d'opération", "tipo"),
        "amount": ("amount", "gross", "gross credit", "brutto", "betrag", "montant brut", "montant", "importe",
                   "bruto"),
        "fee": ("fee", "fees", "commission", "gebühr", "gebühren", "frais", "comisión", "tarifa"),
        "net": ("net", "net credit", "netto", "montant net", "neto"),
        "currency": ("currency", "net currency", "währung", "devise", "moneda"),
        "charge_id": ("charge_id", "charge id", "payment id", "original reference", "zahlungs-id",
                      "id de paiement", "id de pago"),
        "order_reference": ("order_reference", "order id", "merchant reference", "order reference",
                            "händlerreferenz", "référence marchand", "referencia del comercio"),
        "payout_id": ("payout_id", "payout id", "batch number", "settlement id", "auszahlungs-id",
                      "id de virement", "id de liquidación"),
        "payout_date": ("payout_date", "payout date", "settlement date", "auszahlungsdatum",
                        "date de virement", "fecha de liquidación"),
    },
    "bank": {
        "booking_date": ("booking_date", "booking date", "date", "posting date", "transaction date",
                         "buchungstag", "buchungsdatum", "date d'opération", "date comptable", "fecha",
                         "fecha operación", "fecha contable"),
        "value_date": ("value_date", "value date", "valuta", "wertstellung", "date de valeur", "fecha valor"),
        "amount": ("amount", "betrag", "umsatz", "montant", "importe", "cantidad"),
        "currency": ("currency", "währung", "devise", "moneda", "divisa"),
        "reference": ("reference", "end to end id", "end-to-end id", "referenz", "référence", "referencia"),
        "remittance": ("remittance", "description", "details", "verwendungszweck", "buchungstext", "libellé",
                       "concepto", "descripción"),
        "bank_reference": ("bank_reference", "bank reference", "transaction id", "bankreferenz",
                           "référence bancaire", "referencia bancaria"),
        # A credit converted from another currency (issue 31): what was sent, in what, at what rate.
        "original_amount": ("original_amount", "original amount", "instructed amount", "originalbetrag",
                            "montant d'origine", "importe original"),
        "original_currency": ("original_currency", "original currency", "instructed currency", "originalwährung",
                              "devise d'origine", "moneda original"),
        "exchange_rate": ("exchange_rate", "exchange rate", "fx rate", "kurs", "wechselkurs", "taux de change",
                          "tipo de cambio"),
    },
    "disputes": {
        "dispute_id": ("dispute_id", "dispute id", "id", "case id", "chargeback id", "fall-id", "id du litige",
                       "id de disputa"),
        "charge_id": ("charge_id", "charge id", "payment id", "transaction id", "zahlungs-id",
                      "id de paiement", "id de pago"),
        "amount": ("amount", "disputed amount", "betrag", "montant", "importe"),
        "currency": ("currency", "währung", "devise", "moneda"),
        "reason": ("reason", "grund", "motif", "motivo", "razón"),
        "status": ("status", "statut", "estado"),
        "evidence_due_by": ("evidence_due_by", "evidence due by", "due by", "respond by", "frist",
                            "date limite", "fecha límite"),
        "created_at": ("created_at", "created", "date", "opened", "erstellt", "date de création",
                       "fecha de creación"),
    },
}

# Candidate strptime formats, tried in this order. Day-first and month-first pairs both
# appear: when every sampled value fits both, the suggestion says so instead of choosing.
DATE_FORMATS = (
    "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d",
    # With an offset: Shopify's "2026-11-13 14:22:10 +0100", ISO 8601 "2026-11-13T14:22:10+01:00" / "...Z".
    "%Y-%m-%d %H:%M:%S %z", "%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S.%f%z", "%Y-%m-%d %H:%M:%S%z",
    # Magento's order grid ("Nov 13, 2026 2:22:10 PM") and spelled-out months ("13 Nov 2026").
    "%b %d, %Y %I:%M:%S %p", "%b %d, %Y", "%d %b %Y %H:%M", "%d %b %Y",
    "%d/%m/%Y %H:%M:%S", "%d/%m/%Y %H:%M", "%d/%m/%Y", "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M", "%m/%d/%Y",
    "%d.%m.%Y %H:%M:%S", "%d.%m.%Y %H:%M", "%d.%m.%Y", "%d-%m-%Y %H:%M", "%d-%m-%Y", "%Y/%m/%d",
    "%d/%m/%y", "%m/%d/%y", "%d.%m.%y",
)
_DAY_MONTH_SWAP = str.maketrans({"d": "m", "m": "d"})
_DECIMAL_COMMA = re.compile(r"^[-+(]?\d{1,3}(?:[.\s\u00a0]\d{3})*,\d{1,3}\)?-?$")
_DECIMAL_POINT = re.compile(r"^[-+(]?\d{1,3}(?:[,\s\u00a0]\d{3})*\.\d{1,3}\)?-?$|^[-+(]?\d+\.\d{1,3}\)?-?$")


def _match_columns(kind: str, header: list[str]) -> dict[str, str]:
    normalised = {normalise_header(h): h.strip() for h in header}
    taken: set[str] = set()
    columns: dict[str, str] = {}
    for name in CANONICAL[kind]:
        for synonym in SYNONYMS[kind][name]:
            if synonym in normalised and synonym not in taken:
                columns[name] = normalised[synonym]
                taken.add(synonym)
                break
    return columns


def _fits(values: list[str], fmt: str) -> bool:
    try:
        for value in values:
            datetime.strptime(value, fmt)
    except ValueError:
        return False
    return True


def date_format_sniff(values: list[str]) -> tuple[str | None, str]:
    """(format, note). None when nothing fits, or when a day-first and a month-first
    format both fit every value (12/11 vs 11/12): that is never guessed."""
    values = [v for v in values if v]
    if not values:
        return None, "no values to read"
    for fmt in DATE_FORMATS:
        if not _fits(values, fmt):
            continue
        swapped = fmt.translate(_DAY_MONTH_SWAP)
        if fmt.startswith(("%d", "%m")) and _fits(values, swapped):
            return None, f"ambiguous: every value fits both {fmt} and {swapped}; say which in the mapping"
        return fmt, "read from the values"
    return None, "no known date format fits every value"


_EITHER = re.compile(r"[-+(]?\d{1,3}[.,]\d{3}\)?-?")
_MARKER = re.compile(r"^[^\d\s()+\-.,]{1,4}\s?|\s?[^\d\s()+\-.,]{1,4}$")  # "€ 24,95", "24,95 €", "EUR 5"


def decimal_separator_sniff(values: list[str]) -> tuple[str, str]:
    """(separator, note) read from the amounts: "1.234,50" and "12,5" say comma, "1,234.50"
    and "12.50" say point; "1,234" or "1.234" alone could be either, and is said to be."""
    cleaned = [_MARKER.sub("", v.strip()) for v in values if v.strip()]
    either = [v for v in cleaned if _EITHER.fullmatch(v)]  # "1,234": thousands or three decimals
    clear = [v for v in cleaned if not _EITHER.fullmatch(v)]
    comma = sum(bool(_DECIMAL_COMMA.match(v)) for v in clear)
    point = sum(bool(_DECIMAL_POINT.match(v)) for v in clear)
    if comma == point:
        if either:
            return ".", "decimal separator: ambiguous (every amount fits thousands or decimals); '.' assumed"
        return ".", "decimal separator: no amount shows one; '.' assumed"
    return ("," if comma > point else "."), "decimal separator: read from the values"


def _json_safe(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in sorted(row.items())}


@dataclass(frozen=True)
class SampledFile:
    """What a suggestion reads: the delimiter, the header row and the first rows."""

    delimiter: str
    header: list[str]
    sample: list[list[str]]

    @property
    def index(self) -> dict[str, int]:
        return {h.strip(): i for i, h in enumerate(self.header)}

    def values(self, header: str) -> list[str]:
        i = self.index[header]
        return [c[i].strip() for c in self.sample if i < len(c)]


def file_sample(text: str) -> SampledFile:
    first_line = text.lstrip("\ufeff").split("\n", 1)[0]
    delimiter = sniff_delimiter(first_line)
    header, body = csv_rows(text, delimiter)
    sample = [cells for _, (_, cells) in zip(range(SNIFF_ROWS), body, strict=False)]
    return SampledFile(delimiter=delimiter, header=header, sample=sample)


def layout_suggest(*, kind: str, text: str) -> dict[str, Any]:
    """The suggested layout for a CSV of `kind` (see the module docstring), as JSON data."""
    sampled = file_sample(text)
    return suggestion_build(kind=kind, sampled=sampled, columns=_match_columns(kind, sampled.header))


def suggestion_build(*, kind: str, sampled: SampledFile, columns: dict[str, str],
                     date_format_fallback: str | None = None) -> dict[str, Any]:
    """The suggestion for `columns` (field -> header): date format and decimal separator
    sniffed from their values, confidence, preview. `date_format_fallback` is used only where
    no known format fits (never where two fit: an ambiguity is never resolved here)."""
    sample, delimiter, index = sampled.sample, sampled.delimiter, sampled.index

    def values(name: str) -> list[str]:
        return sampled.values(columns[name])

    notes: list[str] = []
    date_format: str | None = None
    for name in CANONICAL[kind]:
        if name in DATE_FIELDS and name in columns:
            found, note = date_format_sniff(values(name))
            if found is None and note.startswith("no known") and date_format_fallback:
                found, note = date_format_fallback, "read by the model, checked against every sampled value"
            notes.append(f"{name}: {note}")
            if found is None:
                date_format = None
                break
            if date_format is None or len(found) > len(date_format):
                date_format = found  # the richest format (with time) covers the plain dates
    amount_values = [v for name in ("amount", "fee", "net") if name in columns for v in values(name)]
    decimal_separator, decimal_note = decimal_separator_sniff(amount_values)
    notes.append(decimal_note)
    mapped_required = len(REQUIRED[kind] & set(columns)) / len(REQUIRED[kind])
    confidence = round(mapped_required * (1.0 if date_format else 0.5), 2)
    preview: list[dict[str, Any]] = []
    missing = sorted(REQUIRED[kind] - set(columns))
    if missing:
        notes.append(f"no header found for {', '.join(missing)}")
    if date_format and not missing:
        spec = LayoutSpec(columns=columns, date_format=date_format, decimal_separator=decimal_separator,
                          delimiter=delimiter)
        previous_order = ""
        try:
            for line, cells in enumerate(sample[:PREVIEW_ROWS], start=2):
                raw = {name: cells[index[h]].strip() for name, h in columns.items()}
                if line_item_continuation(kind, raw, previous_order):
                    continue
                previous_order = raw.get("order_id", "") if kind == "orders" else ""
                preview.append(_json_safe(canonical_row(kind=kind, raw=raw, spec=spec, line=line)))
        except FileRefused as exc:
            notes.append(f"preview stopped: line {exc.line}, {exc.column}: {exc.message}")
            confidence = min(confidence, 0.5)
    return {
        "kind": kind,
        "columns": columns,
        "date_format": date_format,
        "decimal_separator": decimal_separator,
        "delimiter": delimiter,
        "confidence": confidence,
        "preview": preview,
        "notes": notes,
    }
