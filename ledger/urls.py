"""Ledger routes: the recovery report (JSON, HTML, CSV; token) and its public sample."""

from django.urls import path

from ledger import api, views

urlpatterns = [
    path("report", api.ReportApi.as_view(), name="report"),
    path("report.csv", api.ReportCsvApi.as_view(), name="report-csv"),
    path("report/sample", views.report_sample_view, name="report-sample"),
]
