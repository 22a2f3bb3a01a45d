"""Is anything working the task queue? The django-q2 cluster's heartbeat plus the age of the
oldest task that is due and still waiting, for `/health` and `/metrics`."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.status import Stat

logger = logging.getLogger("paypilot.workers")

WORKERS_OK = "ok"  # a cluster reports in and nothing due has waited past the threshold
WORKERS_STALE = "stale"  # a cluster reports in, but a due task has waited past the threshold
WORKERS_NONE = "none"  # no cluster has reported in for the last few seconds

_last_state: str | None = None  # per process: log a change of state once, not every probe


@dataclass(frozen=True)
class WorkersStatus:
    state: str
    clusters: int  # clusters whose heartbeat is current
    oldest_due_seconds: float | None  # age of the oldest due task still waiting (ORM broker only)


def _running_clusters() -> int:
    """Clusters with a current heartbeat. Each sentinel saves its stat every guard cycle
    with a 3 s expiry, so a killed cluster disappears within seconds."""
    try:
        stats = Stat.get_all()
    except Exception:  # noqa: BLE001 - an unreadable heartbeat store means "nobody seen"
        logger.exception("worker heartbeat store unreadable")
        return 0
    return sum(1 for stat in stats if stat.status != Conf.STOPPED)


def _oldest_due_seconds(now: datetime) -> float | None:
    """With the ORM broker a task is due once its lock time has passed (enqueue time, or claim
    time plus `retry` for a claim whose worker died); Redis keeps no such times."""
    if settings.REDIS_URL:
        return None
    oldest = OrmQ.objects.filter(lock__lte=now).order_by("lock").values_list("lock", flat=True).first()
    return max(0.0, (now - oldest).total_seconds()) if oldest else None


def workers_status(*, now: datetime | None = None) -> WorkersStatus:
    """The workers' state; logs a warning when it becomes stale or none (once per change)."""
    global _last_state
    now = now or timezone.now()
    clusters = _running_clusters()
    oldest = _oldest_due_seconds(now)
    if not clusters:
        state = WORKERS_NONE
    elif oldest is not None and oldest > settings.PAYPILOT_WORKERS_STALE_SECONDS:
        state = WORKERS_STALE
    else:
        state = WORKERS_OK
    if state != _last_state:
        if state != WORKERS_OK:
            logger.warning("workers %s: %d cluster(s) reporting, oldest due task waiting %s s", state,
                           clusters, "-" if oldest is None else f"{oldest:.0f}")
        elif _last_state is not None:
            logger.info("workers ok again: %d cluster(s) reporting", clusters)
        _last_state = state
    return WorkersStatus(state=state, clusters=clusters, oldest_due_seconds=oldest)
