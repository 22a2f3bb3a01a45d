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


ERROR_COMPONENT = "Error"
ERROR_SCHEMA = {
    "type": "object",
    "description": "Every refusal: a snake_case reason code and a sentence; never the value sent.",
    "properties": {
        "error": {"type": "string", "description": "reason code, e.g. unauthorized, rate_limited"},
        "detail": {"type": "string"},
        "refusal_id": {"type": "string", "pattern": "^rf_[0-9a-f]{20}$",
                       "description": "this refusal's id, also in the X-Refusal-ID header; it finds the "
                                      "refusal's audit row (a 429's only the access log)"},
        "field": {"type": "string", "description": "the request field at fault (422)"},
        "constraint": {"type": "string", "description": "the constraint it broke (422)"},
    },
    "required": ["error"],
}
# Refusals any authenticated operation can answer, whatever the view does.
_AUTHENTICATED = {
    "401": "no, unknown or revoked bearer token",
    "403": "the token's role may not do this, or the tenant is suspended or deactivated",
    "429": "rate limited; Retry-After says when to try again",
    "503": "the database is unreachable; Retry-After says when to try again",
}
_WITH_BODY = {
    "400": "the body is not a JSON object, or nests too deep",
    "413": "the body is larger than allowed",
    "415": "the body is not application/json",
    "422": "a field breaks its constraint (the field and constraint are named)",
}
_WITH_QUERY = {"422": "a query parameter breaks its constraint (the parameter and constraint are named)"}
_WITH_PATH_ID = {"404": "no such object for this tenant (another tenant's looks the same)"}


def _closed(schema: object, components: dict, seen: set[str]) -> None:  # type: ignore[type-arg]
    """additionalProperties: false on every object a request body can hold (following
    $refs): the views refuse unknown fields (422), so the schema says so."""
    if isinstance(schema, list):
        for item in schema:
            _closed(item, components, seen)
        return
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        name = ref.rsplit("/", 1)[1]
        if name not in seen:
            seen.add(name)
            _closed(components.get(name), components, seen)
        return
    if schema.get("type") == "object" and "properties" in schema:
        schema.setdefault("additionalProperties", False)
    for value in schema.values():
        _closed(value, components, seen)


def closed_request_bodies(result: dict, generator: object, request: object, public: bool) -> dict:  # type: ignore[type-arg]
    """drf-spectacular post-processing hook: request bodies accept exactly their fields."""
    components = result.get("components", {}).get("schemas", {})
    seen: set[str] = set()
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict) and "requestBody" in operation:
                _closed(operation["requestBody"], components, seen)
    return result


def error_responses(result: dict, generator: object, request: object, public: bool) -> dict:  # type: ignore[type-arg]
    """drf-spectacular post-processing hook: declare the error answers every operation can
    give, all with the one `Error` body, where the view did not declare them itself."""
    result.setdefault("components", {}).setdefault("schemas", {})[ERROR_COMPONENT] = ERROR_SCHEMA
    reference = {"application/json": {"schema": {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}}}
    for path, operations in result.get("paths", {}).items():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            codes: dict[str, str] = {}
            if any("BearerToken" in entry for entry in operation.get("security", [])):
                codes.update(_AUTHENTICATED)
            if "requestBody" in operation:
                codes.update(_WITH_BODY)
            if any(parameter.get("in") == "query" for parameter in operation.get("parameters", [])):
                codes.update(_WITH_QUERY)
            if "{" in path:
                codes.update(_WITH_PATH_ID)
            for code, description in codes.items():
                operation["responses"].setdefault(code, {"description": description, "content": reference})
    return result
