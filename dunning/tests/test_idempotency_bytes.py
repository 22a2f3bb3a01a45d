"""`Idempotency-Key` replays are the first answer byte for byte, on SQLite and PostgreSQL
(issue 18: jsonb reordered the stored keys), also for 20 concurrent first uses."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection, connections
from rest_framework.test import APIClient

from dunning.models import IdempotencyRecord
from paypilot.models import Tenant
from paypilot.services import token_issue

# Keys deliberately out of alphabetical order, and text that jsonb would re-space.
BODY = {"plan": "Scale", "customer_id": "cust_idem", "amount": "1499.00", "currency": "usd",
        "failure_code": "card_expired", "customer_name": "Zoë Ünal", "attempt": 2}


def _post(client: APIClient, path: str, body: object, key: str):  # type: ignore[no-untyped-def]
    return client.post(path, data=json.dumps(body), content_type="application/json", HTTP_IDEMPOTENCY_KEY=key)


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "body"), [("/payment-failed", BODY),
                                            ("/payment-failed/batch", {"events": [BODY, BODY]})])
def test_replay_is_the_first_answer_byte_for_byte(tenant, api_client_for, path, body) -> None:  # type: ignore[no-untyped-def]
    client = api_client_for(tenant)
    first = _post(client, path, body, "bytes-1")
    replays = [_post(client, path, body, "bytes-1") for _ in range(3)]
    assert first.status_code == 200
    for replay in replays:
        assert replay.status_code == first.status_code
        assert replay.content == first.content
        assert replay["Content-Type"] == first["Content-Type"] == "application/json"
        assert replay["Idempotent-Replayed"] == "true"
    assert bytes(IdempotencyRecord.objects.get().response_body) == first.content
    # Same rendering as an answer without a key (compact JSON, keys in the code's order).
    assert first.content.startswith(b'{"') and b", " not in first.content[:40]


@pytest.mark.django_db
def test_without_a_key_nothing_is_stored(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    response = api_client_for(tenant).post("/payment-failed", data=json.dumps(BODY), content_type="application/json")
    assert response.status_code == 200 and not IdempotencyRecord.objects.exists()


CONCURRENT = 20


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs DATABASE_URL pointing at PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_first_uses_get_one_answer() -> None:
    tenant = Tenant.objects.create(slug="idem", name="Idem Ltd")
    token = token_issue(tenant=tenant, role="integrator").plaintext
    barrier = threading.Barrier(CONCURRENT)
    answers: list[tuple[int, bytes, str]] = []
    errors: list[BaseException] = []

    def call() -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
            barrier.wait(timeout=30)
            r = _post(client, "/payment-failed", BODY, "concurrent-1")
            answers.append((r.status_code, r.content, r["Content-Type"]))
        except BaseException as exc:  # reported below, so a thread failure fails the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=call) for _ in range(CONCURRENT)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert not errors, errors
    assert len(answers) == CONCURRENT
    assert {status for status, _, _ in answers} == {200}
    assert len({content for _, content, _ in answers}) == 1
    assert IdempotencyRecord.objects.count() == 1
    assert bytes(IdempotencyRecord.objects.get().response_body) == answers[0][1]
