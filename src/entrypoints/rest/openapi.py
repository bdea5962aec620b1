"""The OpenAPI 3.0 document of an API (spec 2.9): its operations and the built-in endpoints.

Every operation is documented from its declaration alone: parameters, request body, the
success response, the errors the layer itself may answer (400, 401/403, 413/415, 500) and its
declared extra responses. An operation whose security is optional lists the empty requirement
``{}`` after its schemes (OpenAPI 3.0's "anonymous allowed").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import ErrorBody
from .health import HealthReport
from .operation import Operation
from .params import Location, Param
from .schema import Schema, SchemaBuilder

OPENAPI_VERSION = "3.0.3"


def document(title: str, version: str, operations: Iterable[Operation]) -> dict[str, Any]:
    """The OpenAPI 3.0 document of an API with these operations (spec 2.9)."""
    builder = SchemaBuilder()
    paths: dict[str, dict[str, Any]] = {}
    schemes: dict[str, Schema] = {}
    error = builder.ref(ErrorBody)
    health = builder.ref(HealthReport)
    paths["/openapi.json"] = {
        "get": {
            "operationId": "openapi",
            "responses": {"200": _json_response("OpenAPI document", {"type": "object"})},
        }
    }
    for probe in ("liveness", "readiness"):
        paths[f"/health/{probe}"] = {
            "get": {
                "operationId": probe,
                "responses": {
                    "200": _json_response("Healthy", health),
                    "503": _json_response("Unhealthy", health),
                },
            }
        }
    used_ids = {"openapi", "liveness", "readiness"}
    for op in operations:
        doc = _operation_doc(op, builder, error)
        # operationId must be unique; a handler registered twice gets a numbered suffix.
        base = candidate = doc["operationId"]
        n = 1
        while candidate in used_ids:
            n += 1
            candidate = f"{base}_{n}"
        used_ids.add(candidate)
        doc["operationId"] = candidate
        paths.setdefault(op.path, {})[op.method.lower()] = doc
        for scheme in op.security:
            schemes[scheme.name] = scheme.openapi()
    components: dict[str, Any] = {"schemas": dict(sorted(builder.components.items()))}
    if schemes:
        components["securitySchemes"] = schemes
    return {
        "openapi": OPENAPI_VERSION,
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": components,
    }


def _operation_doc(op: Operation, builder: SchemaBuilder, error: Schema) -> dict[str, Any]:
    doc: dict[str, Any] = {"operationId": op.name}
    if op.tags:
        doc["tags"] = list(op.tags)
    if op.params:
        doc["parameters"] = [_param_doc(p) for p in op.params]
    if op.request is not None:
        doc["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": builder.schema(op.request)}},
        }
    if op.form is not None:
        form_schema = builder.schema(op.form)
        form_schema.pop("required", None)  # every form field is optional
        doc["requestBody"] = {
            "required": False,
            "content": {
                "application/x-www-form-urlencoded": {"schema": form_schema},
                "multipart/form-data": {"schema": form_schema},
            },
        }
    if op.raw_body is not None:
        doc["requestBody"] = {
            "required": True,
            "content": {
                media: {"schema": builder.schema(kind) if kind else {"type": "string"}}
                for media, kind in op.raw_body.items()
            },
        }
    has_body = op.request is not None or op.form is not None
    responses: dict[str, Any] = {}
    status = str(op.success_status)
    if op.response is not None:
        responses[status] = _json_response("Success", builder.schema(op.response))
    else:
        responses[status] = {"description": "Success"}
    if op.params or has_body:
        responses["400"] = _json_response("Invalid request", error)
    if op.raw_body is not None:
        responses["413"] = _json_response("Request body too large", error)
    if op.security:
        doc["security"] = [{s.name: []} for s in op.security]
        if op.security_optional:
            doc["security"].append({})  # OpenAPI 3.0's "anonymous allowed"
        responses["401"] = _json_response("Unauthorized", error)
        if any(s.scopes for s in op.security):
            responses["403"] = _json_response("Forbidden", error)
    if has_body:
        responses["413"] = _json_response("Request body too large", error)
        responses["415"] = _json_response("Unsupported media type", error)
    for code, kind in op.responses.items():
        if isinstance(kind, str):
            responses[str(code)] = {"description": kind}
        else:
            responses[str(code)] = _json_response(kind.__name__, builder.schema(kind))
    responses.setdefault("500", _json_response("Internal error", error))
    doc["responses"] = dict(sorted(responses.items()))
    return doc


def _json_response(description: str, schema: Schema) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _param_doc(p: Param) -> dict[str, Any]:
    schema: Schema = {"type": "string"}
    if p.location is not Location.PATH and p.pattern is not None:
        schema["pattern"] = p.pattern
    return {"name": p.name, "in": p.location.value, "required": p.required, "schema": schema}
