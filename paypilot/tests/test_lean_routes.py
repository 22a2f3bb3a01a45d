"""Lean routes (paypilot.lean_routes): a marked view runs without the session, auth and
messages middleware and CSRF-exempt, with everything else; a shadowed pattern fails closed."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.checks import run_checks
from django.http import HttpRequest, JsonResponse
from django.test import Client
from django.urls import path

from paypilot.lean_routes import lean_path, lean_route
from paypilot.ratelimit import counters_clear


def _seen(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"session": hasattr(request, "session"), "user": hasattr(request, "user"),
                         "messages": hasattr(request, "_messages")})


@lean_route
def lean_view(request: HttpRequest) -> JsonResponse:
    return _seen(request)


def plain_view(request: HttpRequest) -> JsonResponse:
    return _seen(request)


urlpatterns = [
    path("lean/probe", lean_view),
    path("plain/probe", plain_view),
    path("shadow/<str:name>", plain_view),  # matched first: the lean pattern below never serves
    path("shadow/<str:name>", lean_view),
]

pytestmark = [pytest.mark.urls(__name__), pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _no_limits(settings: Any) -> None:
    counters_clear()
    settings.PAYPILOT_RATE_LIMIT_PER_IP = 0


def test_a_lean_view_gets_no_session_user_messages_or_csrf_check() -> None:
    client = Client(enforce_csrf_checks=True)

    lean = client.post("/lean/probe", data=b"{}", content_type="application/json")
    plain = client.post("/plain/probe", data=b"{}", content_type="application/json")

    assert lean.status_code == 200  # not decorated csrf_exempt: @lean_route exempts it
    assert lean.json() == {"session": False, "user": False, "messages": False}
    assert plain.status_code == 403  # the same request to an ordinary view: CSRF refuses it
    assert client.get("/plain/probe").json() == {"session": True, "user": True, "messages": True}


def test_a_lean_view_keeps_the_request_id_and_security_headers() -> None:
    response = Client().post("/lean/probe", data=b"{}", content_type="application/json",
                             headers={"X-Request-ID": "lean-probe-0001"})

    assert response["X-Request-ID"] == "lean-probe-0001"
    assert response["X-Process-Time"].endswith("ms")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert "Set-Cookie" not in response.headers


def test_a_lean_view_is_still_rate_limited(settings: Any) -> None:
    settings.PAYPILOT_RATE_LIMIT_PER_IP = 2
    client = Client()

    answers = [client.post("/lean/probe", data=b"{}", content_type="application/json") for _ in range(3)]

    assert [a.status_code for a in answers] == [200, 200, 429]
    assert answers[2].json()["error"] == "rate_limited" and int(answers[2]["Retry-After"]) > 0
    assert answers[2]["X-Content-Type-Options"] == "nosniff" and answers[2]["X-Request-ID"]


def test_a_path_that_resolves_to_an_unmarked_view_fails_closed() -> None:
    assert lean_path("/shadow/x")  # the lean pattern matches the path...
    response = Client(raise_request_exception=False).post("/shadow/x", data=b"{}",
                                                          content_type="application/json")
    assert response.status_code == 500  # ...but the view it reaches is not lean: no view runs


@pytest.mark.urls("paypilot.urls")
def test_only_the_webhook_routes_are_lean() -> None:
    for webhook in ("/t/acme/webhooks/stripe", "/webhooks/recharge", "/t/acme/webhooks/chargebee/k3y",
                    "/webhooks/chargebee/k3y"):
        assert lean_path(webhook), webhook
    for other in ("/admin/", "/admin/login/", "/health", "/r/token", "/decide", "/t/acme/webhooks/stripe/x",
                  "/docs", "/payment-failed"):
        assert not lean_path(other), other


def test_django_still_finds_the_middleware_the_admin_and_the_deploy_check_need() -> None:
    found = [message.id for message in run_checks(include_deployment_checks=True)
             if message.id in ("admin.E408", "admin.E409", "admin.E410", "security.W003")]
    assert found == []
