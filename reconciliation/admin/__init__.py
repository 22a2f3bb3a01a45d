"""Reconciliation in the Django admin: uploads and layouts, contract versions, the payments review."""

from reconciliation.admin import disputes, imports, review  # noqa: F401 - registers the ModelAdmins
