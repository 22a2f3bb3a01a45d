"""Leg 2 across currencies: a payout matched through the FX amount its bank credit carries,
and the booked amount checked against that amount at the statement's rate, within the
contract's FX margin."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal

from paypilot.money import currency_exponent
from reconciliation import engine
from reconciliation.engine import BreakItem, money, refs_make
from reconciliation.models import ContractVersion
from reconciliation.services.run_sql import query

# The margin when the contract of the payout's currency states none: 1 % of the converted
# amount, about what a bank's spread and a correspondent's charge take from a payout.
DEFAULT_FX_MARGIN_PERCENT = Decimal("1")


def fx_margin(versions: Iterable[ContractVersion], currency: str, day: int) -> tuple[Decimal, ContractVersion | None]:
    """The FX margin (per cent) of `currency`'s contract version in force on `day`, and that
    version; the default and None when there is none or it states no margin."""
    current = None
    for v in sorted((v for v in versions if v.currency == currency), key=lambda v: (v.effective_day, v.version)):
        if v.effective_day <= day:
            current = v
    if current is None or current.fx_margin_percent is None:
        return DEFAULT_FX_MARGIN_PERCENT, None
    return Decimal(current.fx_margin_percent), current


def converted(amount_minor: int, source: str, rate: Decimal, target: str) -> int:
    """`amount_minor` of `source` at `rate` in minor units of `target`, rounded half up."""
    major = Decimal(amount_minor).scaleb(-currency_exponent(source)) * rate
    return int(major.scaleb(currency_exponent(target)).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def fx_check(breaks: list[BreakItem], versions: list[ContractVersion]) -> None:
    """Each matched credit booked in another currency than its payout (rt_bank's `currency`
    is the instructed one there): booked minus instructed x rate, a break when beyond the
    margin. Credits without a stated rate were matched on the instructed amount alone."""
    rows = query("""
        SELECT b.id, b.bank_reference, b.amount_minor, b.currency, b.booked_minor, b.booked_currency, b.fx_rate,
               m.payout_id, p.payout_day
        FROM rt_pmatch m JOIN rt_payout p ON p.payout_id = m.payout_id JOIN rt_bank b ON b.id = m.bank_id
        WHERE b.booked_currency <> b.currency AND b.fx_rate <> ''
        ORDER BY b.id, m.payout_id""")
    lines: dict[int, dict] = {}
    for bank_id, bank_ref, instructed, currency, booked, booked_ccy, rate, payout_id, payout_day in rows:
        line = lines.setdefault(bank_id, {"label": bank_ref or f"bank line {bank_id}", "instructed": instructed,
                                          "currency": currency, "booked": booked, "booked_ccy": booked_ccy,
                                          "rate": Decimal(rate), "payouts": [], "day": payout_day})
        line["payouts"].append(payout_id)
    for line in lines.values():
        expected = converted(line["instructed"], line["currency"], line["rate"], line["booked_ccy"])
        diff = line["booked"] - expected
        margin, version = fx_margin(versions, line["currency"], line["day"])
        if abs(diff) * 100 <= margin * abs(expected):
            continue
        ccy = line["booked_ccy"]
        word = "short" if diff < 0 else "over"
        share = Decimal(abs(diff) * 100) / abs(expected) if expected else Decimal(100)
        source = version.label if version is not None else "the default"
        breaks.append(BreakItem(
            engine.PAYOUT_SHORT if diff < 0 else engine.PAYOUT_OVER, diff, ccy,
            refs_make(payout=line["payouts"], bank=line["label"]),
            f"Payout {', '.join(sorted(line['payouts']))} of {money(line['instructed'], line['currency'])} arrived "
            f"as {money(line['booked'], ccy)}; at the statement's rate of {line['rate']} that is "
            f"{money(expected, ccy)}, {money(abs(diff), ccy)} {word} ({share:.2f}%), beyond the FX margin of "
            f"{margin.normalize():f}% ({source}).",
            contract_version=version.label if version is not None else None,
            contract_version_id=version.pk if version is not None else None))
