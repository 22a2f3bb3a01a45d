"""One error shape for the whole API: {"error": <reason_code>, "detail": <text>, ...}."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response


class ApiError(exceptions.APIException):
    """Raise from a view or service to answer `status_code` with a reason code."""

    def __init__(self, status_code: int, code: str, detail: str = "", **extra: Any) -> None:
        self.status_code = status_code
        self.code = code
        self.extra = extra
        super().__init__(detail=detail or code, code=code)


class JsonOptionsMixin:
    """OPTIONS answers DRF's metadata as JSON, whatever renderers the view negotiates: a
    CSV or HTML renderer (the report, the Swagger page) cannot draw that dict and raised."""

    def options(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        from rest_framework.renderers import JSONRenderer  # lazy, like the views import below

        response = super().options(request, *args, **kwargs)  # type: ignore[misc]
        request.accepted_renderer = JSONRenderer()
        request.accepted_media_type = JSONRenderer.media_type
        return response


def error_body(code: str, detail: str, **extra: Any) -> dict[str, Any]:
    return {"error": code, "detail": detail, **extra}


def api_error(status_code: int, code: str, detail: str, **extra: Any) -> Response:
    return Response(error_body(code, detail, **extra), status=status_code)


# DRF's own exceptions mapped to our reason codes, so every 4xx has a stable code.
_DRF_CODES: dict[type[exceptions.APIException], str] = {
    exceptions.NotAuthenticated: "unauthorized",
    exceptions.AuthenticationFailed: "unauthorized",
    exceptions.PermissionDenied: "forbidden",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.ParseError: "invalid_body",
    exceptions.Throttled: "rate_limited",
}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApiError):
        response = Response(error_body(exc.code, str(exc.detail), **exc.extra), status=exc.status_code)
        if exc.status_code == status.HTTP_401_UNAUTHORIZED:
            response["WWW-Authenticate"] = 'Bearer realm="paypilot"'
        return response
    # Imported here: rest_framework.views imports our authentication class at load time.
    from rest_framework.views import exception_handler as drf_exception_handler

    handled = drf_exception_handler(exc, context)
    if handled is None:
        return None  # a 500: Django answers with its generic page, no detail leaks
    response = handled
    code = next((c for t, c in _DRF_CODES.items() if isinstance(exc, t)), "invalid_input")
    if isinstance(exc, exceptions.ValidationError):
        response.data = error_body("invalid_input", "the request body failed validation")
        response.status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    elif code == "unauthorized":
        response.data = error_body("unauthorized", "a valid bearer token is required")
    else:
        response.data = error_body(code, str(getattr(exc, "detail", code)))
    return response
