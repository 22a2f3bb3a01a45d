"""django-q2 entry points: thin, take ids, safe to run twice."""

from __future__ import annotations

from integrations.services import webhook_event_process, webhook_events_sweep


def process_event(event_id: int) -> str:
    """Apply one stored webhook event. Raises ProcessingFailed (after recording the failure
    on the event) so django-q2 lists the task as failed; the sweeper retries it."""
    return webhook_event_process(event_id=event_id)


def sweep_webhook_events() -> int:
    """Periodic (django-q2 Schedule "integrations.sweep_webhook_events"): re-enqueue stale events."""
    return webhook_events_sweep()
