"""Routes of the dunning app (included at the root)."""

from django.urls import path

from dunning import api

urlpatterns = [
    path("payment-failed", api.PaymentFailedApi.as_view(), name="payment-failed"),
    path("payment-failed/batch", api.PaymentFailedBatchApi.as_view(), name="payment-failed-batch"),
    path("portfolio-impact", api.PortfolioImpactApi.as_view(), name="portfolio-impact"),
]
