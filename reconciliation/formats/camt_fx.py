"""The FX amount of a camt entry (camt.053 or camt.054) booked in another currency than it was sent.

Layout: ISO 20022 ReportEntry, iso20022.org message definitions of camt.053.001.xx and
camt.054.001.xx: a payout sent in another currency than the account carries, in its
transaction details, AmtDtls/InstdAmt/Amt (the amount instructed, in the payout's currency)
and a CcyXchg (SrcCcy, TrgtCcy, UnitCcy, XchgRate) under InstdAmt or TxAmt. The run matches
such a credit through the instructed amount and checks the booked amount against it at the
stated rate (docs/reconciliation.md, Payouts in another currency).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from reconciliation.formats.base import REASON_BAD_AMOUNT, REASON_MIXED_CURRENCIES, FileRefused
from reconciliation.formats.cells import amount_to_minor, currency_normalise

FX_PATHS = (("NtryDtls", "TxDtls", "AmtDtls"), ("AmtDtls",))


def _find(element: Any, namespace: str, *path: str) -> Any:
    for tag in path:
        if element is None:
            return None
        element = element.find(f"{{{namespace}}}{tag}")
    return element


def entry_fx(entry: Any, namespace: str, row: dict[str, Any], account_ccy: str) -> dict[str, Any]:
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
