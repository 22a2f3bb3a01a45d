"""Prometheus metrics: request counters from the middleware, queue and ledger gauges read
from the database at scrape time (so they are right across every web and worker process)."""

from __future__ import annotations

from collections.abc import Iterator

from django.apps import apps
from django.db.models import Count
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

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
