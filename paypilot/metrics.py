"""Prometheus metrics: request counters from the middleware, queue and ledger gauges read
from the database at scrape time (so they are right across every web and worker process).

Scope: a platform admin scrapes everything (`REGISTRY`); a tenant admin gets only the
database gauges, counted over their own tenant's rows (`metrics_text(tenant_id=...)`).
The per-process HTTP counters mix every tenant's traffic, so they are platform-only, and
so is any collector registered on `REGISTRY` later unless it is added to the tenant view
here on purpose: a new figure is hidden from tenants until someone scopes it.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.apps import apps
from django.db.models import Count
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from paypilot.workers import WORKERS_NONE, WORKERS_OK, WORKERS_STALE, workers_status

# auto_describe off: describing would query the database at import time.
REGISTRY = CollectorRegistry(auto_describe=False)

REQUESTS = Counter(
    "paypilot_http_requests_total", "HTTP requests served by this process",
    ["method", "route", "status"], registry=REGISTRY,
)
LATENCY = Histogram(
    "paypilot_http_request_seconds", "HTTP request latency in this process", ["route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5), registry=REGISTRY,
)

# (model label, field to group by, metric name, help): read only when the app is installed.
_STATE_GAUGES = [
    ("ledger.Invoice", "state", "paypilot_invoices", "Invoices by ledger state"),
    ("integrations.WebhookEvent", "status", "paypilot_webhook_events", "Webhook inbox by status"),
    ("approvals.ApprovalRequest", "status", "paypilot_approval_requests", "Approval requests by status"),
    # `unknown` = delivery unknown (a dead sender after the hand-off): alert on it above 0.
    ("approvals.EmailSend", "status", "paypilot_email_sends", "Email sends by status"),
]


class DatabaseStateCollector(Collector):
    """The state gauges over every row, or with `tenant_id` over that tenant's rows only
    (a model without a tenant column is then left out, never shown whole)."""

    def __init__(self, tenant_id: int | None = None) -> None:
        self.tenant_id = tenant_id

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for label, field, name, help_text in _STATE_GAUGES:
            try:
                model = apps.get_model(label)
            except LookupError:
                continue
            names = {f.name for f in model._meta.get_fields()}
            if field not in names or (self.tenant_id is not None and "tenant" not in names):
                continue
            rows = model.objects.all()
            if self.tenant_id is not None:
                rows = rows.filter(tenant_id=self.tenant_id)
            gauge = GaugeMetricFamily(name, help_text, labels=[field])
            for row in rows.values(field).annotate(n=Count("pk")).order_by():
                gauge.add_metric([str(row[field])], row["n"])
            yield gauge


REGISTRY.register(DatabaseStateCollector())


class WorkersCollector(Collector):
    """The task queue's health as /health sees it, so an alert can fire on a stale queue."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        status = workers_status()
        state = GaugeMetricFamily("paypilot_workers_state", "1 for the workers' current state", labels=["state"])
        for name in (WORKERS_OK, WORKERS_STALE, WORKERS_NONE):
            state.add_metric([name], 1 if status.state == name else 0)
        yield state
        yield GaugeMetricFamily("paypilot_worker_clusters", "django-q2 clusters with a current heartbeat",
                                value=status.clusters)
        if status.oldest_due_seconds is not None:
            yield GaugeMetricFamily("paypilot_queue_oldest_due_seconds",
                                    "Age of the oldest due task still waiting (ORM broker)",
                                    value=status.oldest_due_seconds)


REGISTRY.register(WorkersCollector())


def metrics_text(*, tenant_id: int | None) -> bytes:
    """The Prometheus exposition: everything for None (platform admins), else only the
    database gauges of tenant `tenant_id`."""
    if tenant_id is None:
        return bytes(generate_latest(REGISTRY))
    scoped = CollectorRegistry(auto_describe=False)
    scoped.register(DatabaseStateCollector(tenant_id=tenant_id))
    return bytes(generate_latest(scoped))
