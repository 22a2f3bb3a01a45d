"""Reconciliation in the Django admin: uploads and layouts, contract versions and proposals, the payments review."""

from reconciliation.admin import disputes, imports, proposals, review  # noqa: F401 - registers the ModelAdmins
