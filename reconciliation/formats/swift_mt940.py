"""Reader of SWIFT MT940 bank statements (each :61: line with its :86: details as a bank row)."""

from __future__ import annotations

from datetime import date
from typing import Any

from reconciliation.formats.base import REASON_BAD_AMOUNT, REASON_BAD_DATE, FileRefused, Parsed
from reconciliation.formats.cells import amount_to_minor, currency_normalise
from reconciliation.formats.csvtext import decode
from reconciliation.formats.registry import Reader

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


READER = Reader(
    file_format="mt940", kind="bank", order=20,
    recognises=lambda sample: looks_like_mt940(sample.head),
    read=lambda sample: parse_mt940(decode(sample.data)),
    wrong_kind="an MT940 statement imports only as kind bank",
)
