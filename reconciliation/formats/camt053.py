"""Reader of ISO 20022 camt.053 bank statements (001.02 and later), hostile XML refused unread.

A document with a DTD or entity declaration is parsed with defusedxml, so no DTD or entity
is ever resolved; a plain document goes through the C parser.
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Iterator
from datetime import date
from typing import Any
from xml.etree import ElementTree

from defusedxml import DefusedXmlException
from defusedxml import ElementTree as SafeET

from reconciliation.formats.base import (
    REASON_BAD_AMOUNT,
    REASON_XML_FORBIDDEN,
    REASON_XML_INVALID,
    FileRefused,
    Parsed,
)
from reconciliation.formats.cells import amount_to_minor, currency_normalise, parse_when
from reconciliation.formats.registry import Reader

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


# message -> (namespace pattern, the element whose <Ntry> children are entries, file format,
# what the refusal calls it). The entry (ReportEntry) is the same in both messages.
MESSAGES: dict[str, tuple[re.Pattern[str], str, str, str]] = {
    "camt053": (CAMT053_NS, "Stmt", "camt053", "camt.053.001.02 (or later) statement"),
    "camt054": (re.compile(r"^urn:iso:std:iso:20022:tech:xsd:camt\.054\.001\.(\d{2})$"), "Ntfctn", "camt054",
                "camt.054.001.02 (or later) debit/credit notification"),
}


def parse_camt053(data: bytes) -> Parsed:
    """Entries (<Ntry>) of every statement: signed amount, currency, booking and value date,
    account servicer reference, end-to-end id and the unstructured remittance text."""
    return parse_camt(data, "camt053")


def parse_camt(data: bytes, message: str) -> Parsed:
    """Entries of every statement (camt.053) or notification (camt.054), and of an entry
    converted from another currency its instructed amount and rate (`camt_fx`)."""
    from reconciliation.formats.camt_fx import entry_fx  # the FX reader builds on this module

    pattern, container, file_format, label = MESSAGES[message]
    out = Parsed(kind="bank", file_format=file_format)
    rows: list[dict[str, Any]] = []
    out.rows = rows
    namespace = statement_tag = entry_tag = currency_tag = account_ccy = ""
    tags: dict[str, tuple[str, ...]] = {}
    depth, statement_depth = 0, -1  # an entry counts as a direct child of a <Stmt> / <Ntfctn>
    try:
        for event, element in _camt_events(data):
            if event == "start":
                if depth == 0:
                    namespace = element.tag[1:].split("}", 1)[0] if element.tag.startswith("{") else ""
                    match = pattern.match(namespace)
                    if not match or int(match.group(1)) < 2:
                        raise FileRefused(REASON_XML_INVALID, f"not a {label}")
                    # Every element of the statement is in the document's namespace (the
                    # schemas qualify their elements).
                    tags = _camt_tags(namespace)
                    statement_tag, entry_tag = f"{{{namespace}}}{container}", tags["entry"][0]
                    currency_tag = f"{{{namespace}}}Ccy"
                elif element.tag == statement_tag and statement_depth < 0:
                    statement_depth, account_ccy = depth, ""
                depth += 1
                continue
            depth -= 1
            if element.tag == statement_tag and depth == statement_depth:
                statement_depth = -1
            elif element.tag == entry_tag and statement_depth >= 0 and depth == statement_depth + 1:
                row = _camt_entry(element, len(rows) + 1, tags)
                row.update(entry_fx(element, namespace, row, account_ccy))
                rows.append(row)
                element.clear()
            elif element.tag == currency_tag and statement_depth >= 0 and depth == statement_depth + 2:
                account_ccy = (element.text or "").strip().upper()  # <Acct><Ccy>: the account's currency
    except DefusedXmlException as exc:
        raise FileRefused(REASON_XML_FORBIDDEN, "the XML declares a DTD or entities; refused unread") from exc
    except ElementTree.ParseError as exc:
        raise FileRefused(REASON_XML_INVALID, f"not well-formed XML: {exc}") from exc
    if not namespace:
        raise FileRefused(REASON_XML_INVALID, f"not a {label}")
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


READER = Reader(
    file_format="camt053", kind="bank", order=10,
    recognises=lambda sample: looks_like_xml(sample.data),
    read=lambda sample: parse_camt053(sample.data),
    wrong_kind="an XML file imports only as kind bank (camt.053)",
)
