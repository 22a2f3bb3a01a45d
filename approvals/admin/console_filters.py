"""The approval console's list filters: status (the queue by default), send, expiry, second approver, fixed choices."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from approvals import labels
from approvals.models import ApprovalRequest
from approvals.workspace import EXPIRING_WITHIN
from decisions.rules import CHURN_RISKS, RULES
from dunning.catalogue import catalogue
from dunning.models import Draft
from paypilot.admin_perf import choices_filter, pairs

Status = ApprovalRequest.Status


class QueueFilter(admin.SimpleListFilter):
    """Status, defaulting to the queue (pending) so the console opens on work to do."""

    title = "status"
    parameter_name = "queue"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(s.value, s.label) for s in Status] + [("all", "All")]

    def choices(self, changelist: Any) -> Any:
        current = self.value() or Status.PENDING.value
        for value, label in self.lookup_choices:
            yield {
                "selected": current == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value() or Status.PENDING.value
        return queryset if value == "all" else queryset.filter(status=value)


class DeliveryUnknownFilter(admin.SimpleListFilter):
    """Drafts whose send is "delivery unknown" (its worker died after the hand-off): the ones
    a person must check at the provider and then mark sent or resend (Email sends)."""

    title = "send"
    parameter_name = "send"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("unknown", "Delivery unknown")]

    def choices(self, changelist: Any) -> Any:
        yield {"selected": self.value() is None, "display": "All",
               "query_string": changelist.get_query_string(remove=[self.parameter_name])}
        # These drafts are approved: show them whatever the status filter said.
        yield {"selected": self.value() == "unknown", "display": "Delivery unknown",
               "query_string": changelist.get_query_string({self.parameter_name: "unknown",
                                                            QueueFilter.parameter_name: "all"})}

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(send__status="unknown") if self.value() == "unknown" else queryset


class ExpiresFilter(admin.SimpleListFilter):
    """Pending drafts that expire unapproved within a day (the home page's figure)."""

    title = "expires"
    parameter_name = "expires"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("day", "Within a day")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() != "day":
            return queryset
        now = timezone.now()
        return queryset.filter(expires_at__gt=now, expires_at__lte=now + EXPIRING_WITHIN)


class SecondApproverFilter(admin.SimpleListFilter):
    """High-value drafts approved once, waiting for a different person (the home page's figure)."""

    title = "second approver"
    parameter_name = "second"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("waiting", "Waiting for a second approver")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() != "waiting":
            return queryset
        return queryset.filter(high_value=True, first_approver__isnull=False)


def _locales() -> list[tuple[str, str]]:
    return pairs(catalogue().available_locales())


# Fixed tables, never the rows: four DISTINCT queries over every request cost 1.7 s (SQLite)
# and 2.7 s (PostgreSQL) per view at 900,000 requests (docs/benchmarks.md).
# The source is the request's own copy of its draft's (indexed with the console's orderings):
# filtering on draft__source joined every request to its draft (344 ms on PostgreSQL).
SourceFilter = choices_filter(title="template or LLM", parameter="source", lookup="source",
                              choices=lambda: [(Draft.Source.TEMPLATE, "Template"), (Draft.Source.LLM, "LLM")])
RiskFilter = choices_filter(title="risk", parameter="risk", lookup="draft__decision__churn_risk",
                            choices=lambda: [(risk, labels.label(labels.RISKS, risk)) for risk in CHURN_RISKS])
RuleFilter = choices_filter(title="rule fired", parameter="rule", lookup="draft__decision__rule_fired",
                            choices=lambda: [(rule, labels.label(labels.FAILURE_REASONS, rule))
                                             for rule in sorted(RULES)])
LocaleFilter = choices_filter(title="locale", parameter="locale", lookup="draft__locale", choices=_locales)
