"""A 500 is a generic JSON body naming the request id, and its traceback reaches the log
on `django.request` with that id (issue 18: 369 server errors logged nothing). Django's own
400s (an oversized body) are JSON too."""

from __future__ import annotations

import json
import logging

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from paypilot.logsafe import RequestErrorFilter

EVENT = {"customer_id": "cust_500", "amount": 10, "currency": "usd", "failure_code": "card_expired"}


@pytest.mark.django_db
def test_a_bug_is_a_json_500_and_a_logged_traceback_with_the_request_id(tenant, make_token, monkeypatch, caplog):
    import dunning.api

    def broken(**kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom for jane@example.com")  # a bug, with personal data in its message

    monkeypatch.setattr(dunning.api, "run_recovery", broken)
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(tenant)}")
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = client.post("/payment-failed", data=json.dumps(EVENT), content_type="application/json",
                               HTTP_X_REQUEST_ID="req-500-abcdef")
    assert response.status_code == 500
    assert response.json() == {"error": "server_error", "detail": "internal error", "request_id": "req-500-abcdef"}
    assert b"boom" not in response.content and b"Traceback" not in response.content
    [record] = [r for r in caplog.records if r.name == "django.request"]
    assert "request_id=req-500-abcdef" in record.getMessage()
    assert record.exc_info is not None and "RuntimeError" in record.exc_text
    assert "jane@example.com" not in record.exc_text  # redacted in the traceback text


def test_django_request_is_routed_to_a_handler() -> None:
    config = settings.LOGGING["loggers"]["django.request"]
    assert config["handlers"] and config["level"] == "ERROR"
    assert "request_error" in settings.LOGGING["handlers"][config["handlers"][0]]["filters"]


def test_request_error_filter_without_a_request() -> None:
    record = logging.makeLogRecord({"msg": "Internal Server Error: %s", "args": ("/x",)})
    assert RequestErrorFilter().filter(record)
    assert record.getMessage() == "Internal Server Error: /x request_id=-"


@pytest.mark.django_db
def test_a_declared_body_over_the_limit_is_a_json_413_before_anything_reads_it(client, settings):
    settings.PAYPILOT_MAX_BODY_BYTES = 10_000
    for path in ("/payment-failed", "/t/acme/webhooks/stripe", "/admin/login/", "/decide"):
        response = client.post(path, data=b"{" + b" " * 20_000 + b"}", content_type="application/json")
        assert response.status_code == 413, path
        assert response.json()["error"] == "body_too_large"


def test_handler400_turns_request_data_too_big_into_a_json_413(rf) -> None:
    from django.core.exceptions import RequestDataTooBig, SuspiciousOperation

    from paypilot.views import bad_request

    response = bad_request(rf.post("/x"), RequestDataTooBig("too big"))
    assert response.status_code == 413 and json.loads(response.content)["error"] == "body_too_large"
    other = bad_request(rf.get("/x"), SuspiciousOperation("host"))
    assert other.status_code == 400 and json.loads(other.content)["error"] == "bad_request"
