"""Test-only routes standing for refusals other code adds later (a 410, a 415, an HTML 403):
plain Django views that know nothing about refusal ids."""

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import include, path


def gone(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"error": "tenant_deactivated", "detail": "this tenant is deactivated"}, status=410)


def unsupported(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"error": "unsupported_media_type", "detail": "send application/json"}, status=415)


def html_forbidden(request: HttpRequest) -> HttpResponse:
    return HttpResponse("<h1>Forbidden</h1>", status=403)


def ok(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})


def broken(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"error": "server_error"}, status=500)


urlpatterns = [
    path("t/gone", gone),
    path("t/unsupported", unsupported),
    path("t/html-forbidden", html_forbidden),
    path("t/ok", ok),
    path("t/broken", broken),
    path("", include("paypilot.urls")),
]
