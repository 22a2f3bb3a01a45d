"""Money in integer minor units; conversion to major units only at the display edge.

Exponent table copied from `shared/facts/currency_exponents.json` (ISO 4217 minor-unit
exponents that differ from 2, as Stripe lists its zero-decimal and three-decimal
currencies). It is copied here, not read at run time, so the project is self-contained;
`ledger/tests/test_money.py` checks the copy against the facts file when it is present.
It lives in the core because ledger and reconciliation both need it; `ledger.money`
re-exports it so existing imports keep working.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

# Source: shared/facts/currency_exponents.json, "zero_decimal".
ZERO_DECIMAL = frozenset(
    {
        "BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "MGA",
        "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF",
    }
)
# Source: shared/facts/currency_exponents.json, "three_decimal".
THREE_DECIMAL = frozenset({"BHD", "JOD", "KWD", "OMR", "TND"})
# Source: shared/facts/currency_exponents.json, "default_exponent".
DEFAULT_EXPONENT = 2

CURRENCY_EXPONENTS: dict[str, int] = {
    **{code: 0 for code in ZERO_DECIMAL},
    **{code: 3 for code in THREE_DECIMAL},
}


def currency_normalise(code: str) -> str:
    """Upper-case ISO 4217 code; raises ValueError unless it is three letters."""
    value = (code or "").strip().upper()
    if len(value) != 3 or not value.isalpha() or not value.isascii():
        raise ValueError("currency must be a three-letter ISO 4217 code")
    return value


def currency_exponent(code: str) -> int:
    """Digits after the decimal point in `code`'s major unit (JPY 0, USD 2, KWD 3)."""
    return CURRENCY_EXPONENTS.get(currency_normalise(code), DEFAULT_EXPONENT)


def to_minor(major: Decimal | str | int, currency: str) -> int:
    """Exact conversion of a major-unit amount to minor units.

    Raises ValueError for non-numbers and for more decimals than the currency has: rounding
    money silently is how ledgers drift from the provider's figures.
    """
    if isinstance(major, float):
        raise ValueError("pass amounts as Decimal, str or int, never float")
    try:
        value = Decimal(str(major))
    except InvalidOperation as exc:
        raise ValueError("amount is not a number") from exc
    if not value.is_finite():
        raise ValueError("amount is not a finite number")
    scaled = value.scaleb(currency_exponent(currency))
    if scaled != scaled.to_integral_value():
        raise ValueError("amount has more decimals than the currency allows")
    return int(scaled)


def to_major(amount_minor: int, currency: str) -> Decimal:
    """Minor units to a Decimal in major units, quantised to the currency's exponent."""
    exp = currency_exponent(currency)
    return Decimal(int(amount_minor)).scaleb(-exp).quantize(Decimal(1).scaleb(-exp))


def format_minor(amount_minor: int, currency: str) -> str:
    """Display string with thousands separators: 1234 USD -> "12.34", 1000 JPY -> "1,000",
    1234567 KWD -> "1,234.567"."""
    exp = currency_exponent(currency)
    return f"{to_major(amount_minor, currency):,.{exp}f}"


def percent_of_minor(amount_minor: int, percent_micro: int) -> int:
    """`amount_minor` x a percentage given in millionths of the amount (2.9% -> 29000),
    rounded half up (away from zero) to the minor unit: the contract-fee rule both the
    reconciliation engine (in SQL) and its tests use."""
    product = Decimal(int(amount_minor)) * Decimal(int(percent_micro)) / Decimal(1_000_000)
    return int(product.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def percent_to_micro(percent: Decimal | str) -> int:
    """"2.9" (per cent) -> 29000 millionths; raises ValueError past four decimals."""
    try:
        value = Decimal(str(percent))
    except InvalidOperation as exc:
        raise ValueError("percent is not a number") from exc
    if not value.is_finite() or value < 0:
        raise ValueError("percent must be a non-negative number")
    scaled = value.scaleb(4)
    if scaled != scaled.to_integral_value():
        raise ValueError("percent has more than four decimals")
    return int(scaled)


# ISO 4217 List One (SIX, the maintenance agency; amendments to no. 179, 2025), the codes a
# payment can be made in. Left out on purpose: XXX ("no currency"), XTS (testing), the
# precious metals (XAU, XAG, XPD, XPT), the bond-market units (XBA-XBD), XDR, XSU, XUA and
# the fund codes (BOV, CHE, CHW, CLF, COU, MXV, USN, UYI, UYW): none is money a customer
# pays an invoice in. Kept although withdrawn or being withdrawn (invoices issued before
# the change still fail and are still retried): ANG (XCG from 2025), BGN (EUR from 2026),
# CUC, SLL (SLE), ZWL (ZWG). `ledger/tests/test_money.py` checks that every code of the
# exponent tables above is in here.
ISO_4217 = frozenset(
    """
    AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN
    BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR
    FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD
    JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT
    MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG
    QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL THB
    TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VED VES VND VUV WST XAF XCD XCG XOF
    XPF YER ZAR ZMW ZWG ZWL
    """.split()
)
REASON_CURRENCY_UNKNOWN = "currency_unknown"  # not an ISO 4217 currency one can pay in


def _any_case(code: str) -> str:
    return "".join(f"[{c}{c.lower()}]" for c in code)


# The payable codes in any letter case, as one regular expression that JSON Schema (ECMA-262)
# and Python read alike: the OpenAPI schema declares exactly what `currency_known` accepts,
# so a schema-valid "AAA" is no longer a refused request.
CURRENCY_PATTERN = "^(?:" + "|".join(_any_case(code) for code in sorted(ISO_4217)) + ")$"


def currency_known(code: object) -> bool:
    """True for a payable ISO 4217 code in any case ("usd", "JPY"); False for XXX, QQQ,
    fund codes, non-strings."""
    return isinstance(code, str) and code.strip().upper() in ISO_4217
