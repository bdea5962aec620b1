"""The OpenAPI 3.0 document of an API (spec 2.9): its operations and the built-in endpoints.

Every operation is documented from its declaration alone: parameters, request body, the
success response, the errors the layer itself may answer (400, 401/403, 413/415, 500) and its
declared extra responses. What the declaration says for people (summary, description, tags,
parameter descriptions and examples, example error bodies) goes into the operation, its
parameters and its responses, never into the schemas: spec 2.9 generates no descriptions and
no enums for types, and a parameter's examples must not narrow what it accepts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import Any

from .errors import ErrorBody
from .health import HealthReport
from .operation import Operation, RawResponse
from .params import Location, Param
from .schema import Schema, SchemaBuilder

SERVICE_TAG = "service"
_BUILT_IN_TAGS = {SERVICE_TAG: "The service itself: its health probes and this document."}
_BUILT_IN = {  # path: (operationId, summary, description)
    "/openapi.json": (
        "openapi",
        "This OpenAPI document",
        "The OpenAPI 3.0 document of every operation of this API.",
    ),
    "/health/liveness": (
        "liveness",
        "Liveness probe",
        "200 while the process serves requests; its checks are the process's own.",
    ),
    "/health/readiness": (
        "readiness",
        "Readiness probe",
        "200 when every dependency (the database, a configured Redis, ...) answers; 503 "
        "naming the failing checks otherwise.",
    ),
}


def document(
    title: str, version: str, operations: Iterable[Operation], tags: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The document of an API with these operations; ``tags`` describes the tags they use."""
    builder = SchemaBuilder()
    error = builder.ref(ErrorBody)
    paths = _built_in_paths(builder.ref(HealthReport))
    schemes: dict[str, Schema] = {}
    used_tags: dict[str, None] = {}
    used_ids = {operation_id for operation_id, _, _ in _BUILT_IN.values()}
    for op in operations:
        doc = _operation_doc(op, builder, error)
        doc["operationId"] = _unique_id(doc["operationId"], used_ids)
        paths.setdefault(op.path, {})[op.method.lower()] = doc
        used_tags.update(dict.fromkeys(op.tags))
        for scheme in op.security:
            schemes[scheme.name] = scheme.openapi()
    components: dict[str, Any] = {"schemas": dict(sorted(builder.components.items()))}
    if schemes:
        components["securitySchemes"] = schemes
    return {
        "openapi": "3.0.3",
        "info": {"title": title, "version": version},
        "tags": _tag_list(tags or {}, used_tags),
        "paths": paths,
        "components": components,
    }


def _built_in_paths(health: Schema) -> dict[str, dict[str, Any]]:
    paths: dict[str, dict[str, Any]] = {}
    for path, (operation_id, summary, description) in _BUILT_IN.items():
        responses = {"200": _json_response("OpenAPI document", {"type": "object"})}
        if operation_id != "openapi":
            responses = {"200": _json_response("Healthy", health)}
            responses["503"] = _json_response("Unhealthy", health)
        paths[path] = {
            "get": {
                "operationId": operation_id,
                "summary": summary,
                "description": description,
                "tags": [SERVICE_TAG],
                "responses": responses,
            }
        }
    return paths


def _unique_id(base: str, used: set[str]) -> str:
    """operationId must be unique; a handler registered twice gets a numbered suffix."""
    candidate, n = base, 1
    while candidate in used:
        n += 1
        candidate = f"{base}_{n}"
    used.add(candidate)
    return candidate


def _tag_list(tags: Mapping[str, str], used: Iterable[str]) -> list[dict[str, str]]:
    """Described tags in their declared order, then any tag an operation uses undescribed."""
    described = {**tags, **_BUILT_IN_TAGS}
    tag_list = [{"name": n, "description": d} for n, d in described.items()]
    return tag_list + [{"name": n} for n in used if n not in described]


def _operation_doc(op: Operation, builder: SchemaBuilder, error: Schema) -> dict[str, Any]:
    doc: dict[str, Any] = {"operationId": op.name}
    described = {"summary": op.summary, "description": op.description, "tags": list(op.tags)}
    doc.update((key, value) for key, value in described.items() if value)
    if op.params:
        doc["parameters"] = [_param_doc(p) for p in op.params]
    body = _request_body(op, builder)
    if body is not None:
        doc["requestBody"] = body
    if op.security:
        doc["security"] = [{s.name: []} for s in op.security]
        if op.security_optional:
            doc["security"].append({})  # OpenAPI 3.0's "anonymous allowed"
    responses = _responses(op, builder, error)
    _add_examples(responses, op, error)
    doc["responses"] = dict(sorted(responses.items()))
    return doc


def _request_body(op: Operation, builder: SchemaBuilder) -> dict[str, Any] | None:
    """The operation's ``requestBody``: JSON, a form, or what it reads itself (exclusive)."""
    if op.request is not None:
        return {
            "required": True,
            "content": {"application/json": {"schema": builder.schema(op.request)}},
        }
    if op.form is not None:
        form_schema = builder.schema(op.form)
        form_schema.pop("required", None)  # every form field is optional
        return {
            "required": False,
            "content": {
                "application/x-www-form-urlencoded": {"schema": form_schema},
                "multipart/form-data": {"schema": form_schema},
            },
        }
    if op.raw_body is not None:
        return {
            "required": True,
            "content": {
                media: {"schema": builder.schema(kind) if kind else {"type": "string"}}
                for media, kind in op.raw_body.items()
            },
        }
    return None


def _responses(op: Operation, builder: SchemaBuilder, error: Schema) -> dict[str, Any]:
    """Success, the errors the layer itself may answer, then the declared responses."""
    has_body = op.request is not None or op.form is not None
    responses: dict[str, Any] = {str(op.success_status): {"description": "Success"}}
    if op.response is not None:
        responses[str(op.success_status)] = _json_response("Success", builder.schema(op.response))
    if op.params or has_body:
        responses["400"] = _json_response("Invalid request", error)
    if op.raw_body is not None or has_body:
        responses["413"] = _json_response("Request body too large", error)
    if op.security:
        responses["401"] = _json_response("Unauthorized", error)
        if any(s.scopes for s in op.security):
            responses["403"] = _json_response("Forbidden", error)
    if has_body:
        responses["415"] = _json_response("Unsupported media type", error)
    for code, kind in op.responses.items():
        if isinstance(kind, str):
            responses[str(code)] = {"description": kind}
        elif isinstance(kind, RawResponse):
            responses[str(code)] = {
                "description": kind.description,
                "content": {kind.media_type: {"schema": {"type": "string"}}},
            }
        else:
            responses[str(code)] = _json_response(_phrase(code), builder.schema(kind))
    responses.setdefault("500", _json_response("Internal error", error))
    return responses


def _add_examples(responses: dict[str, Any], op: Operation, error: Schema) -> None:
    """The declared example bodies and the layer's own 400s for the declared parameters, each on
    its response (named by its status and error codes; added where only examples name it)."""
    examples = {code: dict(named) for code, named in op.examples.items()}
    parameter_errors = _parameter_errors(op.params)
    if parameter_errors:
        examples[400] = {**examples.get(400, {}), **parameter_errors}
    for code, named in examples.items():
        if not named:
            continue
        response = responses.get(str(code))
        if response is None or "content" not in response:
            # An error the declaration names only by example: the layer's error body.
            response = responses[str(code)] = _json_response(_phrase(code), error)
        response["description"] = f"{_phrase(code)}: {', '.join(named)}"
        media = response["content"]["application/json"]
        media["examples"] = {name: {"value": body} for name, body in named.items()}


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"Status {status}"


def _parameter_errors(params: Iterable[Param]) -> dict[str, dict[str, Any]]:
    """The layer's own 400 bodies for these parameters, by example name: built by the methods
    the validators raise, so the document cannot drift from the answers."""
    found: dict[str, dict[str, Any]] = {}
    for p in params:
        if p.required_enforced and p.location is not Location.PATH:
            found[f"missing {p.location.value} parameter {p.name}"] = p.missing().body
        if p.pattern is not None:
            found[f"invalid {p.location.value} parameter {p.name}"] = p.invalid().body
    return found


def _json_response(description: str, schema: Schema) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _param_doc(p: Param) -> dict[str, Any]:
    schema: Schema = {"type": "string"}
    if p.location is not Location.PATH and p.pattern is not None:
        schema["pattern"] = p.pattern
    doc: dict[str, Any] = {
        "name": p.name,
        "in": p.location.value,
        "required": p.required,
        "schema": schema,
    }
    if p.description:
        doc["description"] = p.description
    if len(p.examples) == 1:
        doc["example"] = p.examples[0]
    elif p.examples:
        doc["examples"] = {value: {"value": value} for value in p.examples}
    return doc
