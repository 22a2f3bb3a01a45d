"""Reconciliation routes: the payments review (JSON or CSV, tenant token)."""

from django.urls import path

from reconciliation import api

urlpatterns = [
    path("recon/review", api.ReviewApi.as_view(), name="recon-review"),
]
