"""Admin for approvals: tenant memberships now; the console and refusal review join here."""

from approvals.admin import membership  # noqa: F401  (registers the ModelAdmin)
