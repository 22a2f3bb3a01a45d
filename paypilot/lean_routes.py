"""Lean routes: views that skip the session, authentication and messages middleware.

A provider's webhook authenticates by its signature on the raw body: it has no cookie, no
session, no Django user and no CSRF token, and it renders no messages. That middleware
costs it CPU on every delivery and can do nothing for it. A view marked `@lean_route` is
served without it, and is CSRF-exempt (Django's own CsrfViewMiddleware stays in MIDDLEWARE,
where `check --deploy` looks for it by name, and lets an exempt view through at once);
everything else in MIDDLEWARE still runs for it: the request id, refusal ids and access
log, the security headers and CSP, host validation, the rate limits, X-Frame-Options and
the tenant transaction.

The middleware run before the URL is resolved, so the marked views' URL patterns are
compiled once into one regex (`lean_path`); after resolution a request taken as lean whose
view is not marked fails with ImproperlyConfigured (a 500), so a pattern shadowing another
can never strip an ordinary view of its session or CSRF check.

Settings name the subclasses below in place of Django's own classes, so Django's checks
(the admin's need for the session, auth and messages middleware) still find them.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.contrib.auth.middleware import AuthenticationMiddleware as _Authentication
from django.contrib.messages.middleware import MessageMiddleware as _Message
from django.contrib.sessions.middleware import SessionMiddleware as _Session
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.urls import URLPattern, URLResolver, get_resolver, get_urlconf
from django.utils.deprecation import MiddlewareMixin

V = TypeVar("V", bound=Callable[..., Any])
_NOTHING = re.compile(r"(?!)")
_NAMED_GROUP = re.compile(r"\(\?P<\w+>")  # alternatives may not repeat a group's name
_patterns: dict[str | None, re.Pattern[str]] = {}
_lock = threading.Lock()


def lean_route(view: V) -> V:
    """Mark a view to be served without the session, auth and messages middleware, and
    exempt from CSRF. Only for views that need none of them: no cookie, no user, no form,
    no messages (a request authenticated by a signature on its body)."""
    view.paypilot_lean_route = True  # type: ignore[attr-defined]
    view.csrf_exempt = True  # type: ignore[attr-defined]  # what django's csrf_exempt sets
    return view


def _lean_regexes(patterns: Iterable[URLPattern | URLResolver], prefix: str) -> Iterable[str]:
    for entry in patterns:
        own = entry.pattern.regex.pattern.removeprefix("^")
        if isinstance(entry, URLResolver):
            yield from _lean_regexes(entry.url_patterns, prefix + own)
        elif getattr(entry.callback, "paypilot_lean_route", False):
            yield prefix + own


def _pattern() -> re.Pattern[str]:
    urlconf = get_urlconf()
    compiled = _patterns.get(urlconf)
    if compiled is None:
        with _lock:
            resolver = get_resolver(urlconf)
            found = list(_lean_regexes(resolver.url_patterns, resolver.pattern.regex.pattern.removeprefix("^")))
            joined = "|".join(f"(?:{_NAMED_GROUP.sub('(?:', regex)})" for regex in found)
            compiled = re.compile(joined) if found else _NOTHING
            _patterns[urlconf] = compiled
    return compiled


def _forget(**kwargs: Any) -> None:
    _patterns.clear()  # tests that swap ROOT_URLCONF


setting_changed.connect(_forget)


def lean_path(path_info: str) -> bool:
    """Whether this path resolves to a `@lean_route` view (decided before resolution)."""
    return _pattern().match(path_info) is not None


def is_lean(request: HttpRequest) -> bool:
    """`lean_path` for the request, worked out once per request."""
    lean = request.__dict__.get("paypilot_lean")
    if lean is None:
        lean = request.paypilot_lean = lean_path(request.path_info)  # type: ignore[attr-defined]
    return bool(lean)


class _SkippedOnLeanRoutes(MiddlewareMixin):
    """Before a Django middleware class in the bases: a lean request passes straight through."""

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if is_lean(request):
            return self.get_response(request)  # type: ignore[return-value]  # sync only (no async views)
        return super().__call__(request)  # type: ignore[return-value]

    def process_view(self, request: HttpRequest, callback: Callable[..., HttpResponseBase],
                     callback_args: tuple[Any, ...], callback_kwargs: dict[str, Any]) -> HttpResponseBase | None:
        if is_lean(request):
            if not getattr(callback, "paypilot_lean_route", False):
                raise ImproperlyConfigured(
                    f"{request.path_info!r} matched a lean route's pattern but resolved to "
                    f"{getattr(callback, '__qualname__', callback)!r}, which is not @lean_route")
            return None
        inner = getattr(super(), "process_view", None)
        return inner(request, callback, callback_args, callback_kwargs) if inner else None


class SessionMiddleware(_SkippedOnLeanRoutes, _Session):
    pass


class AuthenticationMiddleware(_SkippedOnLeanRoutes, _Authentication):
    pass


class MessageMiddleware(_SkippedOnLeanRoutes, _Message):
    pass
