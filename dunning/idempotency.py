"""`Idempotency-Key` per tenant, stored in the database: a replay returns the first response.

The key is bound to a hash of the route and the canonical JSON body. The same key with a
different route or body is refused (422 `idempotency_key_reused`). Only successful (2xx)
responses are stored, so a request refused for bad input can be corrected and retried
under the same key. Concurrent first uses queue on a per-key lock (PostgreSQL) or are
settled by the unique constraint (SQLite): the later ones answer with the first one's
stored bytes, never a second rendering.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.http import HttpResponse
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from dunning.models import IdempotencyRecord
from paypilot.api import ApiError
from paypilot.models import Tenant

REPLAY_HEADER = "Idempotent-Replayed"
JSON_TYPE = "application/json"


def request_hash(route: str, body: Any) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(f"{route}\n{canonical}".encode()).hexdigest()


def _answer(body: bytes, *, status: int, content_type: str) -> HttpResponse:
    return HttpResponse(body, status=status, content_type=content_type)


def _replay(record: IdempotencyRecord, digest: str) -> HttpResponse:
    if record.request_hash != digest:
        raise ApiError(422, "idempotency_key_reused",
                       "this Idempotency-Key was already used with a different request")
    response = _answer(bytes(record.response_body), status=record.status_code, content_type=record.content_type)
    response[REPLAY_HEADER] = "true"
    return response


def _lock_key(*, tenant: Tenant, key: str) -> None:
    """PostgreSQL: concurrent first uses of one key queue here, until the holder's
    transaction (the request's, see paypilot.tenancy) commits its record; the next one then
    replays it instead of computing a second, different answer. SQLite serialises writers
    already; there the unique constraint settles the race (the loser replays the winner)."""
    if connection.vendor != "postgresql":
        return
    digest = hashlib.sha256(f"idempotency:{tenant.pk}:{key}".encode()).digest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest[:8], "big", signed=True)])


def idempotent_call(*, tenant: Tenant, key: str | None, route: str, body: Any,
                    compute: Callable[[], tuple[int, dict[str, Any]]]) -> HttpResponse:
    """Answer from the stored first response for `key`, or compute, store and answer.

    The answer is rendered once to bytes; those bytes are both what the first caller gets
    and what is stored, so a replay is byte for byte the first answer (status and
    Content-Type too; only the `Idempotent-Replayed: true` marker and the per-request
    X-Request-ID/X-Process-Time differ)."""
    if key is None:
        status, payload = compute()
        return Response(payload, status=status)
    digest = request_hash(route, body)
    # On PostgreSQL the lock, the lookup, the compute and the insert share one transaction.
    scope = transaction.atomic() if connection.vendor == "postgresql" else nullcontext()
    with scope:
        _lock_key(tenant=tenant, key=key)
        found = IdempotencyRecord.objects.filter(tenant=tenant, key=key).first()
        if found is not None:
            return _replay(found, digest)
        status, payload = compute()
        rendered = JSONRenderer().render(payload)
        if 200 <= status < 300:
            try:
                with transaction.atomic():
                    IdempotencyRecord.objects.create(tenant=tenant, key=key, request_hash=digest, status_code=status,
                                                     response_body=rendered, content_type=JSON_TYPE)
            except IntegrityError:
                return _replay(IdempotencyRecord.objects.get(tenant=tenant, key=key), digest)
    return _answer(rendered, status=status, content_type=JSON_TYPE)
