"""Ledger routes: the recovery report (JSON, HTML, CSV; token) and its public sample."""

from django.urls import path

from ledger import api, views

urlpatterns = [
    path("report", api.ReportApi.as_view(), name="report"),
    path("report.csv", api.ReportApi.as_view(csv_only=True), name="report-csv"),
    path("report/sample", views.report_sample_view, name="report-sample"),
]
