"""The OpenAPI contract: every operation's answers typed, its refusals declared with the one
error body, and an example per operation, so a generated client knows every shape."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def _operations(schema: dict):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            yield path, method, operation


def _typed(media: dict) -> bool:
    body = media.get("schema", {})
    if "$ref" in body or body.get("type") in {"string", "array"}:
        return True
    return body.get("type") == "object" and bool(body.get("properties") or body.get("additionalProperties"))


def test_every_success_answer_is_typed(schema):
    untyped = []
    for path, method, operation in _operations(schema):
        for code, response in operation["responses"].items():
            if code.startswith("2"):
                for media_type, media in (response.get("content") or {}).items():
                    if not _typed(media):
                        untyped.append(f"{method.upper()} {path} {code} {media_type}")
    assert untyped == []


def test_every_authenticated_operation_declares_its_refusals_with_the_error_body(schema):
    for path, method, operation in _operations(schema):
        if not any("BearerToken" in entry for entry in operation.get("security", [])):
            continue
        for code in ("401", "403", "429", "503"):
            response = operation["responses"].get(code)
            assert response, f"{method.upper()} {path} does not declare {code}"
            assert "content" in response, f"{method.upper()} {path} {code} has no body"
        if "requestBody" in operation:
            for code in ("400", "413", "415", "422"):
                assert code in operation["responses"], f"{method.upper()} {path} does not declare {code}"
    assert schema["components"]["schemas"]["Error"]["required"] == ["error"]


def test_every_operation_has_an_example(schema):
    missing = []
    for path, method, operation in _operations(schema):
        bodies = [*(operation.get("requestBody", {}).get("content", {}).values())]
        for response in operation["responses"].values():
            bodies.extend((response.get("content") or {}).values())
        if not any("examples" in media or "example" in media for media in bodies):
            missing.append(f"{method.upper()} {path}")
    assert missing == []
