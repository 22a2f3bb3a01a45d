"""Routes of the approvals app: GET /refusals and anymail's tracking webhooks."""

from typing import Any

from anymail import urls as anymail_urls
from django.urls import path

from approvals.api import RefusalListApi
from approvals.tracking import webhook_secret_required


def _tracking_routes() -> list[Any]:
    """anymail's tracking views only (no inbound mail), each refusing until a webhook secret
    or signing key is configured."""
    routes = []
    for pattern in anymail_urls.urlpatterns:
        name = pattern.name or ""
        if name.endswith("_tracking_webhook") or name == "mandrill_webhook":
            routes.append(
                path(f"anymail/{pattern.pattern}", webhook_secret_required(pattern.callback),
                     name=f"anymail-{name}")
            )
    return routes


urlpatterns: list[Any] = [
    path("refusals", RefusalListApi.as_view(), name="refusals"),
    *_tracking_routes(),
]
