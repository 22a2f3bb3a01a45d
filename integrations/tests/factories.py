"""factory-boy factories for integrations models."""

from __future__ import annotations

import json

import factory

from integrations.models import WebhookEvent
from paypilot.tests.factories import TenantFactory


class WebhookEventFactory(factory.django.DjangoModelFactory):
    """A stored delivery (no task enqueued): for admin, sweeper and trigger tests."""

    class Meta:
        model = WebhookEvent

    tenant = factory.SubFactory(TenantFactory)
    provider = "stripe"
    event_key = factory.Sequence(lambda n: f"evt_factory{n:06d}")
    event_type = "invoice.payment_action_required"
    body = factory.LazyAttribute(
        lambda o: json.dumps(
            {"id": o.event_key, "object": "event", "type": o.event_type, "data": {"object": {"id": "in_x"}}}
        ).encode()
    )
    headers = factory.LazyFunction(dict)
