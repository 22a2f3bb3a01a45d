"""Integrations services: the inbox, processing, credentials and recovery links."""

from integrations.services.credentials import (
    chargebee_url_key,
    credential_read,
    credential_set,
    link_settings_set,
)
from integrations.services.inbox import (
    Receipt,
    enqueue_processing,
    webhook_event_reprocess,
    webhook_events_sweep,
    webhook_receive,
)
from integrations.services.links import link_allowed, recovery_link_follow
from integrations.services.processing import ProcessingFailed, webhook_event_process

__all__ = [
    "ProcessingFailed",
    "Receipt",
    "chargebee_url_key",
    "credential_read",
    "credential_set",
    "enqueue_processing",
    "link_allowed",
    "link_settings_set",
    "recovery_link_follow",
    "webhook_event_process",
    "webhook_event_reprocess",
    "webhook_events_sweep",
    "webhook_receive",
]
