"""Contract terms: versions per tenant and currency, only ever added (a change is a new version)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.db import transaction
from django.db.models import Max

from paypilot.models import Tenant
from paypilot.money import percent_to_micro, to_minor
from paypilot.services import audit_record
from paypilot.tenancy import tenant_context
from reconciliation.formats import currency_normalise, day_number
from reconciliation.models import ContractVersion

# A fee above this is a misread (29 instead of 2.9), not a contract: refused, never stored.
MAX_PERCENT = Decimal("20")
DELAY_UNITS = ("days", "business_days")  # calendar days; banking days of the contract's calendar


class ContractRefused(ValueError):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def contract_add(
    *, tenant: Tenant, currency: str, effective_from: date, percent: str | Decimal, fixed: str | Decimal,
    chargeback_fee: str | Decimal, payout_delay_days: int, international_surcharge: str | Decimal | None = None,
    rolling_reserve: str | Decimal | None = None, quotes: dict[str, str] | None = None,
    fx_margin: str | Decimal | None = None, actor: str,
    payout_delay_unit: str = "days", payout_calendar: str = "", rolling_reserve_days: int | None = None,
) -> ContractVersion:
    """Add the next version of `currency`'s terms (amounts in major units). Audited.

    `payout_delay_unit` is "days" or "business_days" (then `payout_calendar` names whose banking
    days: "US", "TARGET", "GB"...); `rolling_reserve_days` how long each reserved part is held.
    Raises ContractRefused for an unknown currency, a percent outside 0-20, amounts with
    more decimals than the currency has, a negative delay or another delay unit."""
    try:
        code = currency_normalise(currency)
        micro = percent_to_micro(percent)
        fixed_minor = to_minor(str(fixed), code)
        chargeback_minor = to_minor(str(chargeback_fee), code)
    except ValueError as exc:
        raise ContractRefused("bad_contract_value", str(exc)) from exc
    if Decimal(str(percent)) > MAX_PERCENT:
        raise ContractRefused("percent_out_of_range", f"a {percent}% fee is not plausible; give per cent (2.9)")
    if fixed_minor < 0 or chargeback_minor < 0 or payout_delay_days < 0 or (rolling_reserve_days or 0) < 0:
        raise ContractRefused("bad_contract_value", "fees, the payout delay and the holding period cannot be negative")
    if payout_delay_unit not in DELAY_UNITS:
        raise ContractRefused("bad_contract_value", f"the payout delay is counted in {' or '.join(DELAY_UNITS)}")
    margin = _fx_margin(fx_margin)
    with tenant_context(tenant), transaction.atomic():
        # The unique (tenant, currency, version) constraint refuses a concurrent duplicate.
        latest = (ContractVersion.objects.filter(tenant=tenant, currency=code)
                  .aggregate(v=Max("version"))["v"]) or 0
        version = ContractVersion.objects.create(
            tenant=tenant, currency=code, version=latest + 1, effective_from=effective_from,
            effective_day=day_number(effective_from), percent=Decimal(str(percent)), percent_micro=micro,
            fixed_minor=fixed_minor, chargeback_fee_minor=chargeback_minor, payout_delay_days=payout_delay_days,
            international_surcharge_percent=Decimal(str(international_surcharge)) if international_surcharge else None,
            rolling_reserve_percent=Decimal(str(rolling_reserve)) if rolling_reserve is not None else None,
            payout_delay_unit=payout_delay_unit, payout_calendar=payout_calendar if payout_delay_unit != "days" else "",
            rolling_reserve_days=rolling_reserve_days,
            fx_margin_percent=margin, quotes=quotes or {}, actor=actor,
        )
        audit_record(event="reconciliation.contract.added", tenant=tenant, actor=actor,
                     detail={"currency": code, "version": version.version})
    return version


def _fx_margin(value: str | Decimal | None) -> Decimal | None:
    """The FX margin in per cent (0 to MAX_PERCENT), or None for the documented default."""
    if value is None or str(value).strip() == "":
        return None
    try:
        margin = Decimal(str(value).strip().rstrip("%"))
    except ArithmeticError as exc:
        raise ContractRefused("bad_contract_value", f"FX margin {value!r} is not a number") from exc
    if not margin.is_finite() or not 0 <= margin <= MAX_PERCENT:
        raise ContractRefused("percent_out_of_range", f"an FX margin of {value}% is outside 0% to {MAX_PERCENT}%")
    return margin
