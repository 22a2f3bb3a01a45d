"""File formats to canonical rows: pure functions, no ORM (tested directly).

Three ways in: Stripe's itemized balance / payout reconciliation report (recognised by its
header, amounts in major units, currency lower case), an ISO 20022 camt.053 statement
(001.02 and later namespaces, parsed with defusedxml so no DTD or entity is ever
resolved), and any other CSV through a confirmed `Layout`. Every error carries the
1-based line, the column and a reason code; the caller refuses the whole file.
"""

from __future__ import annotations

import csv
import functools
import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any
from xml.etree import ElementTree

from defusedxml import DefusedXmlException
from defusedxml import ElementTree as SafeET

from paypilot.money import currency_exponent, currency_known
from paypilot.money import currency_normalise as _normalise


def currency_normalise(code: str) -> str:
    """Upper-case ISO 4217 code one can pay in; ValueError for QQQ, XXX, fund codes."""
    value = _normalise(code)
    if not currency_known(value):
        raise ValueError(f"{value} is not an ISO 4217 currency")
    return value

# Reason codes (the JSON `reason` of a refused file).
REASON_BAD_AMOUNT = "bad_amount"
REASON_BAD_DATE = "bad_date"
REASON_BAD_CURRENCY = "bad_currency"
REASON_MISSING_VALUE = "missing_value"
REASON_BAD_TYPE = "bad_type"
REASON_BAD_ENCODING = "bad_encoding"
REASON_EMPTY_FILE = "empty_file"
REASON_XML_FORBIDDEN = "xml_forbidden"
REASON_XML_INVALID = "xml_invalid"
REASON_WRONG_COLUMNS = "wrong_number_of_columns"
REASON_MISSING_COLUMN = "missing_column"

EPOCH = date(1970, 1, 1)

# Canonical fields per kind (the contract); the first ones listed are required.
CANONICAL: dict[str, tuple[str, ...]] = {
    "orders": ("order_id", "ordered_at", "amount", "currency", "payment_reference", "customer_email", "status"),
    "provider": (
        "transaction_id", "created_at", "type", "amount", "fee", "net", "currency", "charge_id",
        "order_reference", "payout_id", "payout_date",
    ),
    "bank": ("booking_date", "value_date", "amount", "currency", "reference", "remittance", "bank_reference"),
    "disputes": (
        "dispute_id", "charge_id", "amount", "currency", "reason", "status", "evidence_due_by", "created_at",
    ),
}
REQUIRED: dict[str, frozenset[str]] = {
    "orders": frozenset({"order_id", "ordered_at", "amount", "currency"}),
    "provider": frozenset({"transaction_id", "created_at", "type", "amount", "currency"}),
    "bank": frozenset({"booking_date", "amount", "currency"}),
    "disputes": frozenset({"dispute_id", "amount", "currency", "created_at"}),
}
DATE_FIELDS = frozenset({"ordered_at", "created_at", "payout_date", "booking_date", "value_date", "evidence_due_by"})
AMOUNT_FIELDS = frozenset({"amount", "fee", "net"})
PROVIDER_TYPES = frozenset(
    {"charge", "refund", "dispute", "dispute_reversal", "fee", "payout", "adjustment"}
)
# Other providers' words for the canonical types (lower case, spaces and _ removed), used
# when a layout gives no explicit translation. Adyen's settlement details report
# (Settled, Refunded, Chargeback, ChargebackReversed, MerchantPayout, InvoiceDeduction),
# PayPal's and Mollie's common English labels.
TYPE_SYNONYMS: dict[str, str] = {
    "charge": "charge", "payment": "charge", "sale": "charge", "settled": "charge", "capture": "charge",
    "captured": "charge",
    "refund": "refund", "refunded": "refund",
    "dispute": "dispute", "chargeback": "dispute",
    "disputereversal": "dispute_reversal", "chargebackreversed": "dispute_reversal",
    "fee": "fee", "invoicededuction": "fee",
    "payout": "payout", "merchantpayout": "payout", "transfer": "payout", "settlement": "payout",
    "adjustment": "adjustment", "balancetransfer": "adjustment",
}


class FileRefused(Exception):
    """The whole file is refused: `reason` is a code, `line`/`column` locate the first bad cell."""

    def __init__(self, reason: str, message: str, *, line: int | None = None, column: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.line = line
        self.column = column

    def as_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "message": self.message, "line": self.line, "column": self.column}


@dataclass(frozen=True)
class LayoutSpec:
    """What a confirmed layout says about a CSV: canonical field -> header, and how to read cells."""

    columns: dict[str, str]
    date_format: str
    decimal_separator: str = "."
    delimiter: str = ","
    # Optional per-field value translation, e.g. {"type": {"Settled": "charge"}}: another
    # provider's words for the canonical provider types.
    values: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class Parsed:
    """A file being read: rows are produced lazily (a million-row export never sits in
    memory as dicts), so a bad row raises FileRefused while the caller is inserting; the
    caller's transaction then rolls the whole file back."""

    kind: str
    file_format: str
    rows: Iterable[dict[str, Any]] = field(default_factory=list)
    # The same rows as canonical columns (`reconciliation.columnar`) when the fast reader
    # took the file; then `rows` is not read.
    columns: dict[str, Any] | None = None


# --- cells ---------------------------------------------------------------------------------

_THOUSANDS = re.compile(r"[\s'\u00a0\u202f]")


_PLAIN = re.compile(r"-?[0-9]{1,15}")


@functools.lru_cache(maxsize=256)
def _exponent(currency: str) -> int:
    return currency_exponent(currency)


def _plain_to_minor(value: str, separator: str, exponent: int) -> int | None:
    """Fast path for the common cell ("-12.50", "1234", "12,5"): integer arithmetic only.
    None when the cell needs the general parser (thousands separators, brackets, ...)."""
    whole, sep, frac = value.partition(separator)
    if not _PLAIN.fullmatch(whole) or (sep and not (0 < len(frac) <= exponent and frac.isdigit()
                                                    and frac.isascii())):
        return None
    units = int(whole.lstrip("-") or "0") * 10**exponent + (int(frac.ljust(exponent, "0")) if sep else 0)
    return -units if whole.startswith("-") else units


def amount_to_minor(text: str, currency: str, *, decimal_separator: str = ".") -> int:
    """A major-unit amount as written in an export ("1.234,56", "-12.50", "(3.00)") to minor
    units, exactly; ValueError on anything that is not a number with at most the currency's
    decimals (a silently rounded import is how books drift)."""
    value = text.strip()
    fast = _plain_to_minor(value, decimal_separator, _exponent(currency))
    if fast is not None:
        return fast
    negative = value.startswith("(") and value.endswith(")")
    if negative:
        value = value[1:-1]
    value = _THOUSANDS.sub("", value)
    if decimal_separator == ",":
        value = value.replace(".", "").replace(",", ".")
    else:
        value = value.replace(",", "")
    if value.endswith("-"):  # trailing minus, common in German bank exports
        value = "-" + value[:-1]
    try:
        number = Decimal(value)
    except InvalidOperation as exc:
        raise ValueError("not a number") from exc
    if not number.is_finite():
        raise ValueError("not a finite number")
    scaled = number.scaleb(currency_exponent(currency))
    if scaled != scaled.to_integral_value():
        raise ValueError("more decimals than the currency has")
    minor = int(scaled)
    return -minor if negative else minor


def day_number(value: date) -> int:
    return (value - EPOCH).days


_FIELD_WIDTH = {"%d": 2, "%m": 2, "%Y": 4, "%H": 2, "%M": 2, "%S": 2}
_FIELD_NAME = {"%d": "day", "%m": "month", "%Y": "year", "%H": "hour", "%M": "minute", "%S": "second"}


@functools.lru_cache(maxsize=64)
def _fixed_width(date_format: str) -> tuple[int, tuple[tuple[str, int, int], ...], tuple[tuple[int, str], ...]] | None:
    """Slices of a format made only of zero-padded fields and literal separators
    ("%d/%m/%Y %H:%M"): such cells are read by slicing, ~10x faster than strptime."""
    fields, literals, pos, i = [], [], 0, 0
    while i < len(date_format):
        token = date_format[i:i + 2]
        if token in _FIELD_WIDTH:
            fields.append((_FIELD_NAME[token], pos, pos + _FIELD_WIDTH[token]))
            pos += _FIELD_WIDTH[token]
            i += 2
        elif date_format[i] == "%":
            return None
        else:
            literals.append((pos, date_format[i]))
            pos += 1
            i += 1
    return (pos, tuple(fields), tuple(literals)) if {"day", "month", "year"} <= {f[0] for f in fields} else None


def parse_when(text: str, date_format: str) -> datetime:
    """Naive export time under `date_format` ("iso" for ISO 8601), read as UTC."""
    value = text.strip()
    fixed = _fixed_width(date_format) if date_format != "iso" else None
    if fixed is not None and len(value) == fixed[0] and all(value[p] == c for p, c in fixed[2]):
        parts = {name: value[a:b] for name, a, b in fixed[1]}
        if all(v.isdigit() and v.isascii() for v in parts.values()):
            return datetime(tzinfo=UTC, **{k: int(v) for k, v in parts.items()})  # ValueError on 31/02
    if date_format == "iso":
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    else:
        parsed = datetime.strptime(value, date_format)
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


# --- CSV -----------------------------------------------------------------------------------

def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileRefused(REASON_BAD_ENCODING, "the file is not UTF-8 text", line=None) from exc


def normalise_header(header: str) -> str:
    return " ".join(header.strip().strip('"').lower().split())


def sniff_delimiter(first_line: str) -> str:
    """The candidate that splits the header into the most cells (ties: , then ; then tab)."""
    counts = {d: first_line.count(d) for d in (",", ";", "\t", "|")}
    best = max(counts.values())
    return next(d for d in (",", ";", "\t", "|") if counts[d] == best) if best else ","


def text_stream(data: bytes) -> io.TextIOBase:
    """The bytes as UTF-8 text read lazily: a 200 MB export is not held twice (bytes and str)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")


def csv_rows(text: str | io.TextIOBase, delimiter: str) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """The header and an iterator of (line number, cells), blank lines skipped."""
    reader = csv.reader(io.StringIO(text) if isinstance(text, str) else text, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration as exc:
        raise FileRefused(REASON_EMPTY_FILE, "the file is empty") from exc
    except UnicodeDecodeError as exc:
        raise FileRefused(REASON_BAD_ENCODING, "the file is not UTF-8 text", line=1) from exc

    def body() -> Iterator[tuple[int, list[str]]]:
        try:
            for cells in reader:
                if not any(cells) or not "".join(cells).strip():  # any() first: the cheap test
                    continue
                yield reader.line_num, cells
        except UnicodeDecodeError as exc:
            raise FileRefused(REASON_BAD_ENCODING, "the file is not UTF-8 text",
                              line=reader.line_num + 1) from exc

    return header, body()


# --- Stripe itemized report ----------------------------------------------------------------

# Column names of Stripe's itemized balance change / payout reconciliation reports
# (docs.stripe.com/reports/report-types and /reports/reporting-categories). Recognised
# when these are all present; the rest of the report's columns are optional.
STRIPE_REQUIRED = frozenset(
    {"balance_transaction_id", "created_utc", "currency", "gross", "fee", "net", "reporting_category"}
)
# reporting_category -> canonical type. Partial-capture reversals stay tied to their charge
# (as an adjustment carrying its charge_id) so the run sees the captured amount.
STRIPE_CATEGORIES: dict[str, str] = {
    "charge": "charge",
    "refund": "refund",
    "refund_failure": "adjustment",
    "dispute": "dispute",
    "dispute_reversal": "dispute_reversal",
    "fee": "fee",
    "payout": "payout",
    "payout_reversal": "adjustment",
    "partial_capture_reversal": "adjustment",
}


def is_stripe_report(header: list[str]) -> bool:
    return STRIPE_REQUIRED <= {normalise_header(h) for h in header}


@functools.lru_cache(maxsize=4096)
def _date_part(text: str) -> date | None:
    """The date of a report timestamp; cached, payout dates repeat on thousands of rows."""
    value = text.strip()
    return parse_when(value, "iso").date() if value else None


def parse_stripe_report(text: str | io.TextIOBase) -> Parsed:
    header, body = csv_rows(text, ",")
    return Parsed(kind="provider", file_format="stripe_report", rows=_stripe_rows(header, body))


def _stripe_rows(header: list[str], body: Iterator[tuple[int, list[str]]]) -> Iterator[dict[str, Any]]:
    index = {normalise_header(h): i for i, h in enumerate(header)}
    width = len(header)
    # Column positions looked up once; -1 for an optional column the report leaves out.
    at = {name: index.get(name, -1) for name in (
        "balance_transaction_id", "created_utc", "currency", "gross", "fee", "net", "reporting_category",
        "source_id", "charge_id", "automatic_payout_id", "automatic_payout_effective_at_utc",
        "payment_metadata[order_id]", "order_id")}
    (i_txn, i_created, i_currency, i_gross, i_fee, i_net, i_category, i_source, i_charge, i_payout, i_payout_at,
     i_meta_order, i_order) = at.values()
    currencies: dict[str, str] = {}

    def cell(cells: list[str], i: int) -> str:
        return cells[i].strip() if i >= 0 else ""

    for line, cells in body:
        if len(cells) != width:
            raise FileRefused(REASON_WRONG_COLUMNS, f"{len(cells)} cells, the header has {width}", line=line)
        column = "currency"
        try:
            raw_currency = cells[i_currency]
            currency = currencies.get(raw_currency) or currencies.setdefault(raw_currency,
                                                                             currency_normalise(raw_currency))
            kind = STRIPE_CATEGORIES.get(cells[i_category].strip(), "adjustment")
            column = "created_utc"
            created = parse_when(cells[i_created], "iso")
            column = "gross"
            gross = amount_to_minor(cells[i_gross] or "0", currency)
            column = "fee"
            fee = amount_to_minor(cells[i_fee] or "0", currency)
            column = "net"
            net = amount_to_minor(cells[i_net] or "0", currency)
            column = "automatic_payout_effective_at_utc"
            payout_date = _date_part(cell(cells, i_payout_at))
        except ValueError as exc:
            reason = REASON_BAD_CURRENCY if column == "currency" else (
                REASON_BAD_DATE if "utc" in column else REASON_BAD_AMOUNT)
            raise FileRefused(reason, str(exc), line=line, column=column) from exc
        source = cell(cells, i_source)
        charge_id = cell(cells, i_charge) or (source if kind == "charge" else "")
        payout_id = cell(cells, i_payout) or (source if kind == "payout" else "")
        if kind == "payout" and payout_date is None:
            payout_date = created.date()
        transaction_id = cells[i_txn].strip()
        if not transaction_id:
            raise FileRefused(REASON_MISSING_VALUE, "no balance_transaction_id", line=line,
                              column="balance_transaction_id")
        yield {
            "line": line,
            "transaction_id": transaction_id,
            "created_at": created,
            "type": kind,
            "amount_minor": gross,
            "fee_minor": fee,
            "net_minor": net,
            "currency": currency,
            "charge_id": charge_id,
            "order_reference": cell(cells, i_meta_order) or cell(cells, i_order),
            "payout_id": payout_id,
            "payout_date": payout_date,
        }


# --- camt.053 ------------------------------------------------------------------------------

CAMT053_NS = re.compile(r"^urn:iso:std:iso:20022:tech:xsd:camt\.053\.001\.(\d{2})$")


def looks_like_xml(data: bytes) -> bool:
    head = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"<")


def _child(element: Any, path: tuple[str, ...]) -> Any:
    """The first element along `path` (qualified tags, one per level) or None. Each step is
    ElementTree's C-level find of one tag: a /-path or a prefix would go through the
    Python ElementPath machinery, most of the parse at 20,000 entries."""
    for tag in path:
        if element is None:
            return None
        element = element.find(tag)
    return element


def _text(element: Any, path: tuple[str, ...]) -> str:
    found = _child(element, path)
    return found.text.strip() if found is not None and found.text else ""


@functools.lru_cache(maxsize=16)
def _camt_tags(namespace: str) -> dict[str, tuple[str, ...]]:
    """The paths read from each entry, as qualified tags of the statement's namespace."""
    paths = {"amount": "Amt", "indicator": "CdtDbtInd", "booked": "BookgDt/Dt", "booked_time": "BookgDt/DtTm",
             "value": "ValDt/Dt", "value_time": "ValDt/DtTm", "end_to_end": "NtryDtls/TxDtls/Refs/EndToEndId",
             "servicer": "AcctSvcrRef", "remittance": "Ustrd", "statement": "Stmt", "entry": "Ntry"}
    return {key: tuple(f"{{{namespace}}}{part}" for part in path.split("/")) for key, path in paths.items()}


def _xml_date(element: Any, day: tuple[str, ...], moment: tuple[str, ...]) -> date | None:
    """camt dates are <Dt>YYYY-MM-DD</Dt> or <DtTm>...</DtTm>."""
    value = _text(element, day) or _text(element, moment)
    return parse_when(value, "iso").date() if value else None


def _camt_events(data: bytes) -> Iterator[tuple[str, Any]]:
    """Start and end events of the document, streamed: each entry is read and then cleared,
    so the tree never holds the whole statement (a whole tree of 20,000 entries is 200,000
    live elements, and the garbage collector's passes over them cost 3x the parse)."""
    source = io.BytesIO(data)
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data or b"\x00" in data:
        return SafeET.iterparse(source, events=("start", "end"), forbid_dtd=True, forbid_entities=True,
                                forbid_external=True)
    # No DTD, so nothing can declare an entity: the C parser, ~5x faster than the
    # Python-level handlers defusedxml installs. (NUL bytes mean UTF-16/32, where the byte
    # search above would not see a DOCTYPE: those go to defusedxml.)
    return ElementTree.iterparse(source, events=("start", "end"))


def parse_camt053(data: bytes) -> Parsed:
    """Entries (<Ntry>) of every statement: signed amount, currency, booking and value date,
    account servicer reference, end-to-end id and the unstructured remittance text."""
    out = Parsed(kind="bank", file_format="camt053")
    rows: list[dict[str, Any]] = []
    out.rows = rows
    namespace = statement_tag = entry_tag = ""
    tags: dict[str, tuple[str, ...]] = {}
    depth, statement_depth = 0, -1  # an entry counts as a direct child of a <Stmt>
    try:
        for event, element in _camt_events(data):
            if event == "start":
                if depth == 0:
                    namespace = element.tag[1:].split("}", 1)[0] if element.tag.startswith("{") else ""
                    match = CAMT053_NS.match(namespace)
                    if not match or int(match.group(1)) < 2:
                        raise FileRefused(REASON_XML_INVALID, "not a camt.053.001.02 (or later) statement")
                    # Every element of the statement is in the document's namespace (the
                    # schemas qualify their elements).
                    tags = _camt_tags(namespace)
                    statement_tag, entry_tag = tags["statement"][0], tags["entry"][0]
                elif element.tag == statement_tag and statement_depth < 0:
                    statement_depth = depth
                depth += 1
                continue
            depth -= 1
            if element.tag == statement_tag and depth == statement_depth:
                statement_depth = -1
            elif element.tag == entry_tag and statement_depth >= 0 and depth == statement_depth + 1:
                rows.append(_camt_entry(element, len(rows) + 1, tags))
                element.clear()
    except DefusedXmlException as exc:
        raise FileRefused(REASON_XML_FORBIDDEN, "the XML declares a DTD or entities; refused unread") from exc
    except ElementTree.ParseError as exc:
        raise FileRefused(REASON_XML_INVALID, f"not well-formed XML: {exc}") from exc
    if not namespace:
        raise FileRefused(REASON_XML_INVALID, "not a camt.053.001.02 (or later) statement")
    return out


def _camt_entry(entry: Any, entry_no: int, tags: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """One <Ntry> as a canonical bank row; a bad amount, indicator or date refuses the file."""
    amount_el = _child(entry, tags["amount"])
    try:
        if amount_el is None:
            raise ValueError("no <Amt>")
        currency = currency_normalise(amount_el.get("Ccy", ""))
        minor = amount_to_minor(amount_el.text or "", currency)
        indicator = _text(entry, tags["indicator"])
        if indicator not in ("CRDT", "DBIT"):
            raise ValueError("CdtDbtInd must be CRDT or DBIT")
        booking = _xml_date(entry, tags["booked"], tags["booked_time"])
        if booking is None:
            raise ValueError("no booking date")
        value = _xml_date(entry, tags["value"], tags["value_time"])
    except ValueError as exc:
        raise FileRefused(REASON_BAD_AMOUNT, f"entry {entry_no}: {exc}", line=entry_no, column="Ntry") from exc
    end_to_end = _text(entry, tags["end_to_end"])
    return {
        "line": entry_no,
        "booking_date": booking,
        "value_date": value,
        "amount_minor": minor if indicator == "CRDT" else -minor,
        "currency": currency,
        "reference": "" if end_to_end == "NOTPROVIDED" else end_to_end,
        "remittance": " ".join(n.text.strip() for n in entry.iter(tags["remittance"][0]) if n.text),
        "bank_reference": _text(entry, tags["servicer"]),
    }


# --- MT940 --------------------------------------------------------------------------------

REASON_MT940_INVALID = "mt940_invalid"
_NO_REFERENCE = frozenset({"", "NONREF", "NOTPROVIDED"})


def looks_like_mt940(text: str) -> bool:
    """SWIFT MT940: tag lines (:20: then :60F:/:60M: and :61:), maybe after {1:...} blocks."""
    head = text[:4096]
    return ":20:" in head and (":60F:" in head or ":60M:" in head) and ":61:" in text


def parse_mt940(text: str) -> Parsed:
    """Statement lines (:61: with their :86: details) through the `mt-940` library
    (github.com/wolph/mt940): signed amount, currency, entry (booking) and value date,
    customer reference, bank reference, the :86: text as remittance."""
    import mt940  # imported here: only statements in this format need it

    try:
        statements = mt940.parse(text)
    except Exception as exc:  # noqa: BLE001 - the library raises many kinds; all mean "not MT940"
        raise FileRefused(REASON_MT940_INVALID, f"not a readable MT940 statement ({type(exc).__name__})") from exc
    # The library skips a :61: line its pattern does not match; a skipped line would be a
    # silently half-imported statement, so every :61: tag must come back as a transaction.
    tags = [i for i, line in enumerate(text.splitlines(), start=1) if line.startswith(":61:")]
    if len(tags) != len(statements):
        read = {getattr(t, "data", {}).get("bank_reference") for t in statements}
        bad = next((n for n in tags if not any(r and r in text.splitlines()[n - 1] for r in read)), tags[-1])
        raise FileRefused(REASON_MT940_INVALID, f"{len(tags) - len(statements)} statement line(s) (:61:) could "
                          f"not be read", line=bad, column=":61:")
    out = Parsed(kind="bank", file_format="mt940")
    rows: list[dict[str, Any]] = []
    for number, transaction in enumerate(statements, start=1):
        data = transaction.data
        try:
            currency = currency_normalise(data.get("currency") or data["amount"].currency)
            minor = amount_to_minor(str(data["amount"].amount), currency)
        except (KeyError, ValueError, AttributeError) as exc:
            raise FileRefused(REASON_BAD_AMOUNT, f"statement line {number}: {exc}", line=number, column=":61:") from exc
        value_date = data.get("date")
        booking = data.get("entry_date") or value_date
        if booking is None:
            raise FileRefused(REASON_BAD_DATE, f"statement line {number}: no date", line=number, column=":61:")
        reference = (data.get("customer_reference") or "").strip()
        bank_reference = (data.get("bank_reference") or "").strip()
        details = " ".join(str(data.get(k) or "").strip() for k in ("transaction_details", "extra_details"))
        rows.append({
            "line": number,
            "booking_date": date(booking.year, booking.month, booking.day),
            "value_date": date(value_date.year, value_date.month, value_date.day) if value_date else None,
            "amount_minor": minor,
            "currency": currency,
            "reference": "" if reference.upper() in _NO_REFERENCE else reference,
            "remittance": " ".join(details.split()),
            "bank_reference": "" if bank_reference.upper() in _NO_REFERENCE else bank_reference,
        })
    out.rows = rows
    return out


# --- confirmed layouts ---------------------------------------------------------------------

def header_key(header: list[str]) -> str:
    import hashlib

    return hashlib.sha256("\x1f".join(normalise_header(h) for h in header).encode()).hexdigest()


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
    for line, cells in body:
        if len(cells) != width:
            raise FileRefused(REASON_WRONG_COLUMNS, f"{len(cells)} cells, the header has {width}", line=line)
        raw: dict[str, Any] = {name: cells[i].strip() for name, i in single.items()}
        for name, parts in multi.items():
            raw[name] = [(sign, cells[i].strip()) for sign, i in parts]
        yield canonical_row(kind=kind, raw=raw, spec=spec, line=line)


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
        if name == "currency":
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
