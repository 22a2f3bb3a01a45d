"""The decisions app's configuration: registers its decision-table MCP server in the core."""

from django.apps import AppConfig


class DecisionsConfig(AppConfig):
    name = "decisions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # reconciliation's tenant MCP server starts from this one's decision-table tools,
        # reached through the core (paypilot.mcp_registry) rather than an import of decisions.
        from decisions.mcp_server import build_server
        from paypilot.mcp_registry import decision_server_register

        decision_server_register(build_server)
