"""The finance home page: the admin index shows what needs a person today, each figure a
link to the filtered list behind it; Django's list of models stays below it.

Tenant staff see their own tenant; platform admins pick one (`?tenant=<slug>`). Users who
may not view approval requests get Django's index unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse

from approvals import labels
from approvals.models import ApprovalRequest
from approvals.workspace import EXPIRING_WITHIN, Workspace, workspace_read
from paypilot.admin_tenancy import admin_is_platform, admin_tenant_for
from paypilot.models import Tenant
from paypilot.money import format_minor

HOME_TEMPLATE = "admin/approvals/home.html"
VIEW_PERMISSION = "approvals.view_approvalrequest"

# The report's words, each in one sentence a finance person can act on.
REPORT_WORDS: dict[str, str] = {
    "attributable": "Recovered because of PayPilot: the extra money recovered compared with invoices chosen "
                    "at random that PayPilot left alone (the holdout), over the report's mature weeks.",
    "interval": "The range the true figure lies in with 95% confidence; a range that includes zero means "
                "the effect is not yet proven.",
    "withheld": "No figure yet: too few invoices have had their full recovery window in both groups "
                "(treated and holdout), and a difference on so few would be noise.",
    "no_holdout": "No figure: no invoices are held out, so there is nothing to compare against. Set a "
                  "holdout percentage on the recovery report to measure PayPilot's effect.",
}


@dataclass
class Figure:
    label: str
    value: str
    url: str
    hint: str = ""
    id: str = ""


@dataclass
class Card:
    title: str
    figures: list[Figure] = field(default_factory=list)
    note: str = ""
    id: str = ""


def _url(name: str, *, params: dict[str, Any] | None = None, args: list[Any] | None = None) -> str:
    base = reverse(name, args=args)
    return f"{base}?{urlencode(params)}" if params else base


def _money(amount: int, currency: str) -> str:
    return f"{format_minor(amount, currency)} {currency}"


def _age(moment: datetime, now: datetime) -> str:
    hours = max(0, int((now - moment).total_seconds() // 3600))
    return f"{hours} h" if hours < 48 else f"{hours // 24} d"


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def _cards(ws: Workspace, *, user: Any, scope: dict[str, Any], tenant_slug: str) -> list[Card]:
    """The cards `user` may follow: a figure is shown only with the list it links to."""
    queue = "admin:approvals_approvalrequest_changelist"
    invoices = "admin:ledger_invoice_changelist"
    approvals = Card("Waiting for approval", id="pp-card-approvals", figures=[
        Figure("Pending drafts", str(ws.pending), _url(queue, params={"queue": "pending", **scope}),
               id="pp-fig-pending"),
        Figure("Oldest waiting", _age(ws.oldest.requested_at, ws.now) if ws.oldest else "-",
               _url("admin:approvals_approvalrequest_change", args=[ws.oldest.pk]) if ws.oldest
               else _url(queue, params=scope), hint="the draft that expires first", id="pp-fig-oldest"),
        Figure("Expiring within a day", str(ws.expiring),
               _url(queue, params={"queue": "pending", "expires": "day", **scope}),
               hint=f"expire unapproved within {int(EXPIRING_WITHIN.total_seconds() // 3600)} hours",
               id="pp-fig-expiring"),
        Figure("High value, waiting for a second approver", str(ws.second_approver),
               _url(queue, params={"queue": "pending", "second": "waiting", **scope}),
               hint="approved once; a different person must approve too", id="pp-fig-second"),
    ])
    at_risk = Card("Money at risk in open invoices", id="pp-card-risk", note=(
        "Unpaid invoices PayPilot is still working on (not yet paid, cancelled, exhausted or voided)."), figures=[
        Figure(currency, _money(amount, currency),
               _url(invoices, params={"state__in": "failed,messaged,clicked", "currency": currency, **scope}))
        for currency, amount in ws.at_risk.items()
    ] or [Figure("No open invoices", "-", _url(invoices, params=scope))])
    month = ws.month_start
    recovered = Card(f"Recovered in {month:%B %Y}", id="pp-card-recovered", figures=[
        Figure(f"Recovered ({currency}, net of refunds)", _money(amount, currency),
               _url(invoices, params={"state__exact": "recovered", "currency": currency,
                                      "recovered_at__gte": _iso(month), **scope}))
        for currency, amount in ws.recovered_month.items()
    ] or [Figure("Nothing recovered yet this month", "-",
                 _url(invoices, params={"state__exact": "recovered", "recovered_at__gte": _iso(month), **scope}))])
    report_url = _url("admin:ledger_report", params={"tenant": tenant_slug})
    attribution = ws.attribution
    if attribution.get("recovered_attributable"):
        for currency, part in attribution["recovered_attributable"].items():
            low, high = part["ci95_minor"]
            recovered.figures.append(Figure(
                f"Because of PayPilot ({currency})", _money(part["minor"], currency), report_url,
                hint=f"95% range {_money(low, currency)} to {_money(high, currency)}", id="pp-fig-attributable"))
        low_pp, high_pp = attribution["lift_ci95_pp"]
        recovered.note = (f"{REPORT_WORDS['attributable']} Lift {attribution['lift_pp']:+.1f} percentage points "
                          f"(95% range {low_pp:+.1f} to {high_pp:+.1f}). "
                          f"{REPORT_WORDS['interval']}")
    else:
        reason = "no_holdout" if not ws.holdout_pct else "withheld"
        recovered.figures.append(Figure("Because of PayPilot", "not measured yet", report_url,
                                        id="pp-fig-attributable"))
        recovered.note = REPORT_WORDS[reason]
    suppressed = Card("Sends stopped this week, by gate", id="pp-card-suppressed", note=(
        "A gate is a check every email must pass before it leaves; these were stopped and recorded."), figures=[
        Figure(labels.label(labels.GATES, gate), f"{count:,}",
               _url("admin:approvals_suppressedsend_changelist",
                    params={"gate": gate, "created_at__gte": _iso(ws.week_start), **scope}), hint=gate)
        for gate, count in ws.suppressed_week
    ] or [Figure("None this week", "0", _url("admin:approvals_suppressedsend_changelist",
                                             params={"created_at__gte": _iso(ws.week_start), **scope}))])
    cards = [approvals]
    if user.has_perm("ledger.view_invoice"):
        cards += [at_risk, recovered]
    if user.has_perm("approvals.view_suppressedsend"):
        cards.append(suppressed)
    recon = _recon_card(ws, scope=scope)
    if recon is not None and user.has_perm("reconciliation.view_run") and user.has_perm("reconciliation.view_break"):
        cards.append(recon)
    return cards


def _recon_card(ws: Workspace, *, scope: dict[str, Any]) -> Card | None:
    if ws.recon is None:
        return None
    try:
        runs = reverse("admin:reconciliation_run_changelist")
    except NoReverseMatch:
        return None
    run = ws.recon.get("run")
    if run is None:
        return Card("Payments reconciliation", id="pp-card-recon", note="No reconciliation run yet.",
                    figures=[Figure("Runs", "none", runs)])
    review = reverse("admin:reconciliation_run_change", args=[run.pk])
    breaks = reverse("admin:reconciliation_break_changelist") + "?" + urlencode({"status__exact": "open", **scope})
    card = Card(f"Payments reconciliation (as of {ws.recon['as_of']})", id="pp-card-recon", note=(
        "Money in breaks: orders, captures, payouts and bank credits that do not match. Disputes due: chargebacks "
        "whose evidence must be sent within 7 days."), figures=[
        Figure(f"Money in breaks ({currency})", _money(amount, currency), breaks)
        for currency, amount in ws.recon["money_in_breaks"].items()
    ] or [Figure("Money in breaks", "none", review)])
    card.figures.append(Figure("Open breaks", str(ws.recon["open_breaks"]), breaks))
    soonest = ws.recon["disputes_soonest"]
    card.figures.append(Figure(
        "Disputes due", f"{ws.recon['disputes_due']:,}", review + "#disputes",
        hint=f"the soonest in {soonest} days" if soonest is not None else "", id="pp-fig-disputes"))
    for currency, amount in ws.recon["disputes_money"].items():
        card.figures.append(Figure(f"Disputed ({currency})", _money(amount, currency), review + "#disputes"))
    return card


def _tenant_for(request: HttpRequest) -> tuple[Tenant | None, list[Tenant]]:
    if admin_is_platform(request.user):
        tenants = list(Tenant.objects.order_by("slug"))
        wanted = request.GET.get("tenant", "")
        chosen = next((t for t in tenants if t.slug == wanted), tenants[0] if tenants else None)
        return chosen, tenants
    tenant = admin_tenant_for(request.user)
    return tenant, [tenant] if tenant else []


def home_context(request: HttpRequest) -> dict[str, Any]:
    """The figures for the index, or nothing for users who may not view approval requests."""
    if not request.user.has_perm(VIEW_PERMISSION):
        return {}
    tenant, tenants = _tenant_for(request)
    if tenant is None:
        return {"pp_home": True, "pp_tenant": None}
    scope = {"tenant__id__exact": tenant.pk} if admin_is_platform(request.user) else {}
    ws = workspace_read(tenant=tenant)
    return {
        "pp_home": True, "pp_tenant": tenant, "pp_tenants": tenants if admin_is_platform(request.user) else [],
        "pp_cards": _cards(ws, user=request.user, scope=scope, tenant_slug=tenant.slug), "pp_now": ws.now,
        "pp_links": [
            ("Approval queue", _url("admin:approvals_approvalrequest_changelist", params=scope)),
            ("Recovery report", _url("admin:ledger_report", params={"tenant": tenant.slug})),
            ("Refusal review", reverse("admin:approvals_refusal_review")),
        ],
        "pp_withdrawn_url": _url("admin:approvals_approvalrequest_changelist",
                                 params={"queue": ApprovalRequest.Status.WITHDRAWN, **scope}),
    }


_django_index = admin.site.index


def home_index(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> TemplateResponse:
    """Django's index (its app list, permissions and login redirect) with the figures above it."""
    return _django_index(request, extra_context={**home_context(request), **(extra_context or {})})


def install(site: admin.AdminSite) -> None:
    """Make `site`'s index the finance home. Runs at admin autodiscovery, before the admin's
    URLs are built (they wrap `site.index` when first read)."""
    site.index_template = HOME_TEMPLATE
    site.index = home_index  # type: ignore[method-assign,assignment]
