"""Webhook endpoints and the recovery-link redirect. Plain Django views on purpose: the
webhook path must read the raw bytes untouched and answer in milliseconds."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from integrations.providers import PROVIDER_NAMES
from integrations.services import recovery_link_follow, webhook_receive
from paypilot.lean_routes import lean_route
from paypilot.ratelimit import client_address
from paypilot.tenancy import view_binds_tenant


@lean_route  # signed by the provider: no session, CSRF, user or messages (paypilot.lean_routes)
@csrf_exempt
@view_binds_tenant  # webhook_receive binds the tenant it looked up (cached) itself
@require_POST
def webhook_view(request: HttpRequest, provider: str, tenant: str | None = None, url_key: str = "") -> HttpResponse:
    """`POST /t/<tenant>/webhooks/<provider>` (and `/webhooks/<provider>` for the default
    tenant): verify, store, enqueue, 200. See integrations.services.inbox."""
    if provider not in PROVIDER_NAMES:
        return JsonResponse({"error": "not_found", "detail": "unknown provider"}, status=404)
    receipt = webhook_receive(
        tenant_slug=tenant or settings.PAYPILOT_DEFAULT_TENANT,
        provider=provider,
        body=request.body,
        headers=request.headers,
        url_key=url_key,
        client=client_address(request),
    )
    response = JsonResponse(receipt.body, status=receipt.status)
    for name, value in receipt.headers.items():
        response[name] = value
    return response


@require_GET
def recovery_link_view(request: HttpRequest, token: str) -> HttpResponse:
    """`GET /r/<token>`: record the click and redirect to a freshly minted, allowlisted page.
    A forged, altered or expired token gets a plain page, never a redirect."""
    follow = recovery_link_follow(token=token)
    if follow.destination:
        response: HttpResponse = HttpResponseRedirect(follow.destination)
    else:
        status = 404 if follow.reason == "link_invalid" else 200
        response = render(request, "integrations/link_unavailable.html", {"reason": follow.reason}, status=status)
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response
