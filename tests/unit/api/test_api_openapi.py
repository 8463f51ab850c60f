"""The OpenAPI the master serves names every field of every successful answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from assay.api import create_app
from assay.api._methods import document_methods
from assay.config import MasterConfig
from assay.db import Database, sqlite_url
from assay.master import Master

METHODS = {"get", "put", "post", "patch", "delete"}


def untyped_answers(spec: dict[str, Any]) -> list[str]:
    """Every ``/api/v1`` operation whose 2xx answer is missing or an untyped object."""
    schemas = spec.get("components", {}).get("schemas", {})

    def resolve(schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = schemas[schema["$ref"].rsplit("/", 1)[-1]]
        return schema

    def problem(schema: dict[str, Any] | None) -> str | None:
        if not schema:
            return "no schema"
        schema = resolve(schema)
        kind = schema.get("type")
        branches = schema.get("oneOf") or schema.get("anyOf")
        if branches and kind is None:
            # One of several shapes (the messages of an event stream): each must be typed.
            return next((p for p in map(problem, branches) if p is not None), None)
        if kind == "array":
            return problem(schema.get("items"))
        if kind == "object" or "properties" in schema or "additionalProperties" in schema:
            if not schema.get("properties"):
                return "an object with no named fields"
            return None
        if kind in {"string", "integer", "number", "boolean"}:
            return None
        return f"an untyped schema {schema}"

    found = []
    for path, operations in spec["paths"].items():
        if not path.startswith("/api/v1"):
            continue
        for method, operation in operations.items():
            if method not in METHODS:
                continue
            answers = {c: r for c, r in operation["responses"].items() if c.startswith("2")}
            if not answers:
                found.append(f"{method.upper()} {path}: no 2xx answer documented")
            for code, answer in answers.items():
                content = answer.get("content")
                if code == "204" and not content:
                    continue
                if not content:
                    found.append(f"{method.upper()} {path} {code}: no content documented")
                    continue
                for media, body in content.items():
                    why = problem(body.get("schema"))
                    if why:
                        found.append(f"{method.upper()} {path} {code} {media}: {why}")
    return found


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    home: Path = tmp_path_factory.mktemp("home")
    db = Database(sqlite_url(home / "assay.db"))
    try:
        yield create_app(Master(MasterConfig(), db, home))
    finally:
        db.dispose()


@pytest.fixture(scope="module")
def spec(app: FastAPI) -> dict[str, Any]:
    return app.openapi()


def test_the_method_check_reads_the_documents_paths_and_methods_from_the_routes(
    app: FastAPI, spec: dict[str, Any]
) -> None:
    # The 405 check reads the routes, not the document (which takes seconds to build): both
    # must give each path the same methods.
    documented = {
        path: frozenset(m.upper() for m in operations if m in METHODS | {"head", "options"})
        for path, operations in spec["paths"].items()
    }
    assert document_methods(app.routes) == documented


def test_every_api_answer_names_its_fields(spec: dict[str, Any]) -> None:
    assert untyped_answers(spec) == []


def test_every_route_of_the_api_is_in_the_openapi(spec: dict[str, Any]) -> None:
    # Guards the check above against an empty or truncated document.
    operations = [
        (m, p) for p, ops in spec["paths"].items() for m in ops if p.startswith("/api/v1")
    ]
    assert len(operations) >= 30
    assert ("get", "/api/v1/experiments/{experiment_id}") in operations


def test_invalid_requests_are_documented_as_400_with_the_error_shape(
    spec: dict[str, Any],
) -> None:
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert "422" not in responses, f"{method} {path} documents 422"
            schema = responses["400"]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorResponse"}, (method, path)


def test_the_check_finds_a_route_that_answers_an_untyped_dict() -> None:
    app = FastAPI()

    @app.get("/api/v1/loose")
    async def loose() -> dict[str, Any]:
        return {}

    @app.get("/api/v1/bare", response_model=None)
    async def bare() -> None:
        return None

    assert untyped_answers(app.openapi()) == [
        "GET /api/v1/loose 200 application/json: an object with no named fields",
        "GET /api/v1/bare 200 application/json: no schema",
    ]
