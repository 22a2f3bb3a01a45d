"""Root URLs: core routes here, each app's routes from its own urls.py."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from paypilot import views

urlpatterns = [
    path("health", views.health, name="health"),
    path("metrics", views.MetricsApi.as_view(), name="metrics"),
    path("tokens", views.TokenListApi.as_view(), name="token-list"),
    path("tokens/<str:prefix>", views.TokenDetailApi.as_view(), name="token-detail"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script from /docs?script=, not inline: CSP 'self'.
    path("docs", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
    path("admin/", admin.site.urls),
    path("", include("decisions.urls")),
    path("", include("ledger.urls")),
    path("", include("dunning.urls")),
    path("", include("approvals.urls")),
    path("", include("integrations.urls")),
]
