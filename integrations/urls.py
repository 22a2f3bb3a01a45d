"""Routes: provider webhooks (per tenant and for the default tenant) and `/r/<token>`."""

from django.urls import path

from integrations import views

urlpatterns = [
    path("t/<slug:tenant>/webhooks/chargebee/<str:url_key>", views.webhook_view,
         {"provider": "chargebee"}, name="webhook-chargebee-keyed"),
    path("t/<slug:tenant>/webhooks/<str:provider>", views.webhook_view, name="webhook-tenant"),
    path("webhooks/chargebee/<str:url_key>", views.webhook_view, {"provider": "chargebee"},
         name="webhook-chargebee-default-keyed"),
    path("webhooks/<str:provider>", views.webhook_view, name="webhook-default"),
    path("r/<str:token>", views.recovery_link_view, name="recovery-link"),
]
