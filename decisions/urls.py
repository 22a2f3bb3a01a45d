"""Routes of the decisions app (included at the root)."""

from django.urls import path

from decisions import api, pages

urlpatterns = [
    path("decide", api.DecideApi.as_view(), name="decide"),
    path("decisions/outcomes/summary", api.OutcomeSummaryApi.as_view(), name="decision-outcome-summary"),
    path("decisions/<str:invoice_id>", api.DecisionListApi.as_view(), name="decision-list"),
    path("decisions/<str:invoice_id>/outcome", api.OutcomeReportApi.as_view(), name="decision-outcome"),
    path("ach-returns", pages.ach_returns, name="ach-returns"),
]
