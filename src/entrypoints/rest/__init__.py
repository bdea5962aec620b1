"""The generic REST layer: typed operations on aiohttp with a generated OpenAPI document.

It knows nothing about sign-in; the application registers its operations on an :class:`Api`.
"""

from .api import API_VERSION_HEADER, Api
from .call import Call, Cookie, Reply
from .cors import Cors, normalise_origin
from .errors import HttpError, RecordRequest, json_response
from .health import HealthCheck
from .logtext import log_safe
from .operation import Operation, RawResponse
from .params import (
    Location,
    Param,
    Required,
    cookie,
    header,
    path,
    pattern,
    query,
    required,
    required_by_operation,
)
from .security import (
    AUTHENTICATED,
    ApiKey,
    ApiKeyChecker,
    BearerJWT,
    InvalidCredential,
    Principal,
    TokenVerifier,
)
from .wire import wire_field

__all__ = [
    "API_VERSION_HEADER",
    "AUTHENTICATED",
    "Api",
    "ApiKey",
    "ApiKeyChecker",
    "BearerJWT",
    "Call",
    "Cookie",
    "Cors",
    "HealthCheck",
    "HttpError",
    "InvalidCredential",
    "Location",
    "Operation",
    "Param",
    "Principal",
    "RawResponse",
    "RecordRequest",
    "Reply",
    "Required",
    "TokenVerifier",
    "cookie",
    "header",
    "json_response",
    "log_safe",
    "normalise_origin",
    "path",
    "pattern",
    "query",
    "required",
    "required_by_operation",
    "wire_field",
]
