"""`Idempotency-Key` per tenant, stored in the database: a replay returns the first response.

The key is bound to a hash of the route and the canonical JSON body. The same key with a
different route or body is refused (422 `idempotency_key_reused`). Only successful (2xx)
responses are stored, so a request refused for bad input can be corrected and retried
under the same key. Two concurrent first uses are settled by the unique constraint: the
loser answers with the winner's stored response.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction
from rest_framework.response import Response

from dunning.models import IdempotencyRecord
from paypilot.api import ApiError
from paypilot.models import Tenant

REPLAY_HEADER = "Idempotent-Replayed"


def request_hash(route: str, body: Any) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(f"{route}\n{canonical}".encode()).hexdigest()


def _replay(record: IdempotencyRecord, digest: str) -> Response:
    if record.request_hash != digest:
        raise ApiError(422, "idempotency_key_reused",
                       "this Idempotency-Key was already used with a different request")
    response = Response(record.response, status=record.status_code)
    response[REPLAY_HEADER] = "true"
    return response


def idempotent_call(*, tenant: Tenant, key: str | None, route: str, body: Any,
                    compute: Callable[[], tuple[int, dict[str, Any]]]) -> Response:
    """Answer from the stored first response for `key`, or compute, store and answer."""
    if key is None:
        status, payload = compute()
        return Response(payload, status=status)
    digest = request_hash(route, body)
    found = IdempotencyRecord.objects.filter(tenant=tenant, key=key).first()
    if found is not None:
        return _replay(found, digest)
    status, payload = compute()
    if 200 <= status < 300:
        try:
            with transaction.atomic():
                IdempotencyRecord.objects.create(tenant=tenant, key=key, request_hash=digest,
                                                 status_code=status, response=payload)
        except IntegrityError:
            return _replay(IdempotencyRecord.objects.get(tenant=tenant, key=key), digest)
    return Response(payload, status=status)
