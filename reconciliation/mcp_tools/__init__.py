"""The payments-ops MCP tools: thirteen tools over one tenant's reconciliation workspace.

`server.build_tenant_server()` adds them to the three decision-table tools of
`decisions.mcp_server`; `http.McpApi` serves that server at `/mcp` (bearer token) and
`manage.py mcp_server --tenant T` over stdio.
"""
