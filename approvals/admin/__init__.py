"""Admin for approvals: tenant memberships, the approval console and the refusal review."""

from django.contrib import admin

from approvals.admin import digest, home, membership, review  # noqa: F401  (register their ModelAdmins)
from approvals.admin.console import ApprovalRequestAdmin
from approvals.models import ApprovalRequest

admin.site.register(ApprovalRequest, ApprovalRequestAdmin)

# The admin index becomes the finance home page (figures above Django's list of models).
home.install(admin.site)
