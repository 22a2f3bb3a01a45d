"""OpenAPI description of the bearer-token scheme for drf-spectacular."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "paypilot.auth.BearerTokenAuthentication"
    name = "BearerToken"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "`pp_<prefix>_<secret>` issued with `manage.py tokens issue`.",
        }
