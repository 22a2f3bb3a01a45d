"""Prometheus metrics: request counters from the middleware, queue and ledger gauges read
from the database at scrape time (so they are right across every web and worker process)."""

from __future__ import annotations

from collections.abc import Iterator

from django.apps import apps
from django.db.models import Count
from prometheus_client import CollectorRegistry, Counter, Histogram
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
]


class DatabaseStateCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        for label, field, name, help_text in _STATE_GAUGES:
            try:
                model = apps.get_model(label)
            except LookupError:
                continue
            if not any(f.name == field for f in model._meta.get_fields()):
                continue
            gauge = GaugeMetricFamily(name, help_text, labels=[field])
            for row in model.objects.values(field).annotate(n=Count("pk")).order_by():
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
