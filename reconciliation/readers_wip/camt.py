"""ISO 20022 bank-to-customer cash reports: camt.053 statements and camt.054 debit/credit
notifications, streamed through the same entry reader, with the FX amount an entry carries.

Layout: ISO 20022 message definitions camt.053.001.xx (BkToCstmrStmt/Stmt/Ntry) and
camt.054.001.xx (BkToCstmrDbtCdtNtfctn/Ntfctn/Ntry), iso20022.org catalogue of messages; the
entry (ReportEntry) is the same in both. A payout in another currency than the account is
read from the entry's transaction details: AmtDtls/InstdAmt/Amt (the amount instructed, in
the payout's currency) and its CcyXchg (SrcCcy, TrgtCcy, UnitCcy, XchgRate), else
AmtDtls/TxAmt/CcyXchg. Parsed with the standard library's streaming parser when the file
declares no DTD, else defusedxml with DTDs and entities forbidden: nothing is ever resolved.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any
from xml.etree import ElementTree

from defusedxml import DefusedXmlException

from reconciliation.formats import (
    REASON_BAD_AMOUNT,
    REASON_XML_FORBIDDEN,
    REASON_XML_INVALID,
    FileRefused,
    Parsed,
    _camt_entry,
    _camt_events,
    _camt_tags,
    amount_to_minor,
    currency_normalise,
)
from reconciliation.readers_wip.common import INT64_MAX, REASON_MIXED_CURRENCIES

# message -> (namespace pattern, the element holding entries, file format, what it is called)
MESSAGES: dict[str, tuple[re.Pattern[str], str, str, str]] = {
    "camt053": (re.compile(r"^urn:iso:std:iso:20022:tech:xsd:camt\.053\.001\.(\d{2})$"), "Stmt", "camt053",
                "camt.053.001.02 (or later) statement"),
    "camt054": (re.compile(r"^urn:iso:std:iso:20022:tech:xsd:camt\.054\.001\.(\d{2})$"), "Ntfctn", "camt054",
                "camt.054.001.02 (or later) debit/credit notification"),
}
FX_PATHS = (("NtryDtls", "TxDtls", "AmtDtls"), ("AmtDtls",))


def camt_message(data: bytes) -> str | None:
    """Which camt message the document is, from its root namespace (None: neither)."""
    head = data[:2048].decode("utf-8", "replace")
    for name, (pattern, _, _, _) in MESSAGES.items():
        found = re.search(r'xmlns(?::\w+)?="([^"]+)"', head)
        if found and pattern.match(found.group(1)):
            return name
    return None


def parse_camt(data: bytes, message: str) -> Parsed:
    """Entries (<Ntry>) of every statement or notification: signed amount, currency, booking
    and value date, account servicer reference, end-to-end id, the unstructured remittance
    text, and the instructed amount and exchange rate of a foreign-currency entry."""
    pattern, container, file_format, label = MESSAGES[message]
    out = Parsed(kind="bank", file_format=file_format)
    rows: list[dict[str, Any]] = []
    out.rows = rows
    namespace = container_tag = entry_tag = account_ccy_tag = ""
    tags: dict[str, tuple[str, ...]] = {}
    depth, container_depth = 0, -1  # an entry counts as a direct child of its container
    account_ccy = ""
    try:
        for event, element in _camt_events(data):
            if event == "start":
                if depth == 0:
                    namespace = element.tag[1:].split("}", 1)[0] if element.tag.startswith("{") else ""
                    match = pattern.match(namespace)
                    if not match or int(match.group(1)) < 2:
                        raise FileRefused(REASON_XML_INVALID, f"not a {label}")
                    tags = _camt_tags(namespace)
                    container_tag, entry_tag = f"{{{namespace}}}{container}", tags["entry"][0]
                    account_ccy_tag = f"{{{namespace}}}Ccy"
                elif element.tag == container_tag and container_depth < 0:
                    container_depth, account_ccy = depth, ""
                depth += 1
                continue
            depth -= 1
            if element.tag == container_tag and depth == container_depth:
                container_depth = -1
            elif (element.tag == account_ccy_tag and container_depth >= 0 and depth == container_depth + 2
                  and element.text):
                account_ccy = element.text.strip().upper()  # <Acct><Ccy>: the account's currency
            elif element.tag == entry_tag and container_depth >= 0 and depth == container_depth + 1:
                row = _camt_entry(element, len(rows) + 1, tags)
                row.update(_fx(element, namespace, row, account_ccy))
                rows.append(row)
                element.clear()
    except DefusedXmlException as exc:
        raise FileRefused(REASON_XML_FORBIDDEN, "the XML declares a DTD or entities; refused unread") from exc
    except ElementTree.ParseError as exc:
        raise FileRefused(REASON_XML_INVALID, f"not well-formed XML: {exc}") from exc
    if not namespace:
        raise FileRefused(REASON_XML_INVALID, f"not a {label}")
    return out


def _find(element: Any, namespace: str, *path: str) -> Any:
    for tag in path:
        if element is None:
            return None
        element = element.find(f"{{{namespace}}}{tag}")
    return element


def _fx(entry: Any, namespace: str, row: dict[str, Any], account_ccy: str) -> dict[str, Any]:
    """original_amount_minor / original_currency / fx_rate of a foreign-currency entry (the
    rate converts the original currency into the booked one), or nothing."""
    line = row["line"]
    for path in FX_PATHS:
        details = _find(entry, namespace, *path)
        if details is None:
            continue
        instructed = _find(details, namespace, "InstdAmt", "Amt")
        exchange = _find(details, namespace, "InstdAmt", "CcyXchg")
        if exchange is None:
            exchange = _find(details, namespace, "TxAmt", "CcyXchg")
        if instructed is None or (instructed.get("Ccy") or "").upper() == row["currency"]:
            continue
        try:
            currency = currency_normalise(instructed.get("Ccy", ""))
            minor = amount_to_minor(instructed.text or "", currency)
            if abs(minor) > INT64_MAX:
                raise ValueError("the instructed amount is beyond a 64-bit integer")
            rate = _rate(exchange, namespace, source=currency, target=row["currency"])
        except ValueError as exc:
            raise FileRefused(REASON_BAD_AMOUNT, f"entry {line}: InstdAmt: {exc}", line=line,
                              column="AmtDtls") from exc
        sign = 1 if row["amount_minor"] >= 0 else -1
        return {"original_amount_minor": sign * minor, "original_currency": currency, "fx_rate": rate}
    if account_ccy and row["currency"] != account_ccy:
        raise FileRefused(REASON_MIXED_CURRENCIES, f"entry {line} is booked in {row['currency']} on an account in "
                          f"{account_ccy}, with no instructed amount (AmtDtls/InstdAmt) to say why",
                          line=line, column="Amt")
    return {}


def _rate(exchange: Any, namespace: str, *, source: str, target: str) -> str:
    """XchgRate as the factor from `source` into `target` (UnitCcy says which currency the
    rate is quoted per unit of); "" when the entry states none."""
    if exchange is None:
        return ""
    found = _find(exchange, namespace, "XchgRate")
    text = (found.text or "").strip() if found is not None else ""
    if not text:
        return ""
    try:
        rate = Decimal(text)
    except InvalidOperation as exc:
        raise ValueError(f"XchgRate {text[:20]!r} is not a number") from exc
    if not rate.is_finite() or rate <= 0 or len(text) > 24:
        raise ValueError(f"XchgRate {text[:20]!r} is not a positive rate")
    unit = _find(exchange, namespace, "UnitCcy")
    unit_ccy = (unit.text or "").strip().upper() if unit is not None else ""
    if unit_ccy == target and unit_ccy != source:
        rate = (1 / rate).quantize(Decimal("1e-12"))  # quoted per unit of the booked currency: invert
    return format(rate, "f")
