"""The generated OpenAPI document, fetched over HTTP: one test per rule of spec 2.9."""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from openapi_spec_validator import validate

from authgate.entrypoints.rest import (
    Api,
    ApiKey,
    BearerJWT,
    Call,
    Principal,
    cookie,
    header,
    path,
    pattern,
    query,
    required,
    wire_field,
)

from .conftest import Serve


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@attrs.frozen
class Geo:
    lat: float
    lon: float


@attrs.frozen
class Address:
    street: str
    geo: Geo


@attrs.frozen
class LinkedProvider:
    provider: str
    provider_id: str = wire_field("providerId")
    linked_at: dt.datetime = wire_field("linkedAt")
    is_primary: bool = wire_field("isPrimary", default=False)


@attrs.frozen
class Profile:
    name: str
    score: float
    age: int
    admin: bool
    tags: list[str]
    counts: dict[str, int]
    created: dt.datetime
    address: Address
    providers: list[LinkedProvider]
    color: Color
    nickname: str | None
    bio: str = ""
    website: str | None = None


@attrs.frozen
class NewProfile:
    name: str
    labels: dict[str, list[str]] = attrs.field(factory=dict)


class Verifier:
    async def verify(self, token: str) -> Principal:
        return Principal("x", "bearer")


class Keys:
    async def check(self, key: str) -> Principal:
        return Principal("x", "api_key")


def example_api() -> Api:
    api = Api("Profiles", "1.4.2")
    bearer = BearerJWT("bearerAuth", Verifier())
    api_key = ApiKey("apiKeyAuth", "X-API-Key", Keys())

    @api.operation(
        "GET",
        "/users/{id}/profiles/{profileId}",
        params=[
            path("id", pattern(r"^\d+$")),
            query("q", required, pattern(r"^[a-z]+$")),
            query("page"),
            header("X-Tenant", pattern(r"^t-\d+$")),
            header("X-Trace"),
            cookie("pref"),
        ],
        response=Profile,
        security=[bearer],
    )
    async def get_profile(call: Call[None]) -> Profile:
        raise NotImplementedError

    @api.operation("PUT", "/profiles/{id}", request=NewProfile, security=[api_key])
    async def put_profile(call: Call[NewProfile]) -> None:
        return None

    @api.operation("POST", "/profiles", request=NewProfile, response=Profile)
    async def create_profile(call: Call[NewProfile]) -> Profile:
        raise NotImplementedError

    return api


@pytest.fixture
async def doc(serve: Serve) -> dict[str, Any]:
    client = await serve(example_api())
    resp = await client.get("/openapi.json")
    assert resp.status == 200
    body: dict[str, Any] = await resp.json()
    return body


def profile_schema(doc: dict[str, Any]) -> dict[str, Any]:
    get = doc["paths"]["/users/{id}/profiles/{profileId}"]["get"]
    schema: dict[str, Any] = get["responses"]["200"]["content"]["application/json"]["schema"]
    return schema


def walk(node: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) pair in a JSON tree."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield k, v
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


def test_the_document_passes_the_validator(doc: dict[str, Any]) -> None:
    validate(doc)


def test_top_level(doc: dict[str, Any]) -> None:
    assert doc["openapi"] == "3.0.3"
    assert doc["info"] == {"title": "Profiles", "version": "1.4.2"}
    assert set(doc["paths"]) == {
        "/openapi.json",
        "/health/liveness",
        "/health/readiness",
        "/users/{id}/profiles/{profileId}",
        "/profiles/{id}",
        "/profiles",
    }


def test_scalar_types(doc: dict[str, Any]) -> None:
    props = profile_schema(doc)["properties"]
    assert props["name"] == {"type": "string"}
    assert props["score"] == {"type": "number"}
    assert props["age"] == {"type": "integer"}
    assert props["admin"] == {"type": "boolean"}


def test_list_is_an_array_with_items(doc: dict[str, Any]) -> None:
    assert profile_schema(doc)["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string"},
    }


def test_string_keyed_map_is_additional_properties(doc: dict[str, Any]) -> None:
    assert profile_schema(doc)["properties"]["counts"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    body = doc["paths"]["/profiles"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["properties"]["labels"] == {
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "string"}},
    }


def test_timestamp_is_date_time(doc: dict[str, Any]) -> None:
    assert profile_schema(doc)["properties"]["created"] == {
        "type": "string",
        "format": "date-time",
    }


def test_nested_object_is_inline(doc: dict[str, Any]) -> None:
    assert profile_schema(doc)["properties"]["address"] == {
        "type": "object",
        "properties": {
            "street": {"type": "string"},
            "geo": {
                "type": "object",
                "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                "required": ["lat", "lon"],
            },
        },
        "required": ["street", "geo"],
    }
    assert "Address" not in doc["components"]["schemas"]
    assert "Geo" not in doc["components"]["schemas"]


def test_named_object_in_a_list_is_a_component_ref(doc: dict[str, Any]) -> None:
    assert profile_schema(doc)["properties"]["providers"] == {
        "type": "array",
        "items": {"$ref": "#/components/schemas/LinkedProvider"},
    }
    assert doc["components"]["schemas"]["LinkedProvider"] == {
        "type": "object",
        "properties": {
            "provider": {"type": "string"},
            "providerId": {"type": "string"},
            "linkedAt": {"type": "string", "format": "date-time"},
            "isPrimary": {"type": "boolean"},
        },
        "required": ["provider", "providerId", "linkedAt"],
    }


def test_wire_names_are_used(doc: dict[str, Any]) -> None:
    props = doc["components"]["schemas"]["LinkedProvider"]["properties"]
    assert "providerId" in props
    assert "provider_id" not in props


def test_required_unless_optional(doc: dict[str, Any]) -> None:
    schema = profile_schema(doc)
    assert schema["required"] == [
        "name",
        "score",
        "age",
        "admin",
        "tags",
        "counts",
        "created",
        "address",
        "providers",
        "color",
    ]
    # Optional fields (a default, or X | None) are still described, just not required.
    assert schema["properties"]["nickname"] == {"type": "string"}
    assert schema["properties"]["bio"] == {"type": "string"}
    assert schema["properties"]["website"] == {"type": "string"}


def test_no_enum_for_string_enumerations(doc: dict[str, Any]) -> None:
    assert profile_schema(doc)["properties"]["color"] == {"type": "string"}
    assert all(key != "enum" for key, _ in walk(doc))


def test_no_descriptions_in_schemas(doc: dict[str, Any]) -> None:
    schemas = [doc["components"]["schemas"]]
    for item in doc["paths"].values():
        for op in item.values():
            schemas += [p["schema"] for p in op.get("parameters", [])]
            schemas += [
                c["schema"] for r in op["responses"].values() for c in r.get("content", {}).values()
            ]
            if "requestBody" in op:
                schemas += [c["schema"] for c in op["requestBody"]["content"].values()]
    assert len(schemas) > 10
    assert all(key != "description" for key, _ in walk(schemas))


def test_no_length_or_range_constraints(doc: dict[str, Any]) -> None:
    forbidden = {
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "multipleOf",
    }
    assert not [key for key, _ in walk(doc) if key in forbidden]


def test_path_parameters(doc: dict[str, Any]) -> None:
    params = doc["paths"]["/users/{id}/profiles/{profileId}"]["get"]["parameters"]
    in_path = [p for p in params if p["in"] == "path"]
    assert sorted(in_path, key=lambda p: p["name"]) == [
        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
        {"name": "profileId", "in": "path", "required": True, "schema": {"type": "string"}},
    ]


def test_query_and_header_parameters(doc: dict[str, Any]) -> None:
    params = doc["paths"]["/users/{id}/profiles/{profileId}"]["get"]["parameters"]
    by_name = {p["name"]: p for p in params if p["in"] in ("query", "header")}
    assert by_name == {
        "q": {
            "name": "q",
            "in": "query",
            "required": True,
            "schema": {"type": "string", "pattern": "^[a-z]+$"},
        },
        "page": {"name": "page", "in": "query", "required": False, "schema": {"type": "string"}},
        "X-Tenant": {
            "name": "X-Tenant",
            "in": "header",
            "required": False,
            "schema": {"type": "string", "pattern": r"^t-\d+$"},
        },
        "X-Trace": {
            "name": "X-Trace",
            "in": "header",
            "required": False,
            "schema": {"type": "string"},
        },
    }


def test_bearer_scheme(doc: dict[str, Any]) -> None:
    assert doc["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
    }
    get = doc["paths"]["/users/{id}/profiles/{profileId}"]["get"]
    assert get["security"] == [{"bearerAuth": []}]


def test_api_key_scheme(doc: dict[str, Any]) -> None:
    assert doc["components"]["securitySchemes"]["apiKeyAuth"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
    }
    assert doc["paths"]["/profiles/{id}"]["put"]["security"] == [{"apiKeyAuth": []}]
    # An operation without security declares none.
    assert "security" not in doc["paths"]["/profiles"]["post"]


def test_success_response_is_200_with_the_response_schema(doc: dict[str, Any]) -> None:
    responses = doc["paths"]["/users/{id}/profiles/{profileId}"]["get"]["responses"]
    assert set(responses["200"]["content"]) == {"application/json"}
    assert responses["200"]["content"]["application/json"]["schema"]["type"] == "object"
    assert set(profile_schema(doc)["properties"]) == {f.name for f in attrs.fields(Profile)}


def test_request_body_for_consuming_operations(doc: dict[str, Any]) -> None:
    body = doc["paths"]["/profiles/{id}"]["put"]["requestBody"]
    assert body == {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "labels": {
                            "type": "object",
                            "additionalProperties": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                    "required": ["name"],
                }
            }
        },
    }
    # Operations that do not consume a body declare none.
    assert "requestBody" not in doc["paths"]["/users/{id}/profiles/{profileId}"]["get"]


def test_operation_ids_are_unique(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    async def handler(call: Call[None]) -> None:
        return None

    api.group("/v1").operation("GET", "/x")(handler)
    api.group("/v2").operation("GET", "/x")(handler)
    doc = api.openapi()
    validate(doc)
    ids = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))


def _another_linked_provider() -> type:
    @attrs.frozen
    class LinkedProvider:
        other: int

    return LinkedProvider


OtherLinkedProvider = _another_linked_provider()


@attrs.frozen
class Page:
    mine: list[LinkedProvider]
    theirs: list[OtherLinkedProvider]  # type: ignore[valid-type]


def test_two_classes_of_one_name_are_refused() -> None:
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/page", response=Page)
    async def page(call: Call[None]) -> Page:
        raise NotImplementedError

    with pytest.raises(TypeError, match="two schemas named LinkedProvider"):
        api.openapi()


def test_documentation_is_carried_to_operations_parameters_and_responses() -> None:
    api = Api("Example", "1.0.0")
    api.describe_tag("things", "Things and their parts.")
    kind = query(
        "kind", required, pattern(r"^(a|b)$"), description="Which kind.", examples=["a", "b"]
    )

    @api.operation(
        "GET",
        "/things/{id}",
        params=[path("id", description="A thing's id.", examples=["42"]), kind],
        response=NewProfile,
        responses={404: "No such thing"},
        tags=["things"],
        summary="Get a thing",
        description="The thing of this id.",
        examples={404: {"not_found": {"error": "not_found", "message": "no thing 7"}}},
    )
    async def get_thing(call: Call[None]) -> NewProfile:
        raise NotImplementedError

    doc = api.openapi()
    validate(doc)
    assert doc["tags"] == [
        {"name": "things", "description": "Things and their parts."},
        {"name": "service", "description": doc["tags"][1]["description"]},
    ]
    op = doc["paths"]["/things/{id}"]["get"]
    assert (op["summary"], op["description"], op["tags"]) == (
        "Get a thing",
        "The thing of this id.",
        ["things"],
    )
    by_name = {p["name"]: p for p in op["parameters"]}
    assert by_name["id"] == {
        "name": "id",
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
        "description": "A thing's id.",
        "example": "42",
    }
    assert by_name["kind"]["examples"] == {"a": {"value": "a"}, "b": {"value": "b"}}
    assert by_name["kind"]["schema"] == {"type": "string", "pattern": "^(a|b)$"}
    # The layer's own 400s for the declared parameter, as its validators answer them.
    bad = op["responses"]["400"]
    assert bad["content"]["application/json"]["examples"] == {
        "missing query parameter kind": {
            "value": {"error": "missing required request parameter in query: kind"}
        },
        "invalid query parameter kind": {
            "value": {"error": "invalid parameter value in query: kind"}
        },
    }
    missing = op["responses"]["404"]
    assert missing["description"] == "Not Found: not_found"
    assert missing["content"]["application/json"]["examples"]["not_found"]["value"] == {
        "error": "not_found",
        "message": "no thing 7",
    }
    # The built-in endpoints are summarised and grouped too.
    assert doc["paths"]["/health/readiness"]["get"]["tags"] == ["service"]
    assert doc["paths"]["/openapi.json"]["get"]["summary"]
