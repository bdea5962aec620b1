"""The generic REST layer: typed operations on aiohttp with a generated OpenAPI document.

It knows nothing about sign-in; the application registers its operations on an :class:`Api`.
"""

from .api import API_VERSION_HEADER, Api, Group
from .call import Call, Cookie, Reply
from .cors import Cors, normalise_origin
from .errors import (
    AfterSuccess,
    ErrorBody,
    ExceptionHandler,
    HttpError,
    RecordRequest,
    error_middleware,
    json_response,
    layer_error,
    service_error,
)
from .health import HealthCheck, HealthReport, Probe
from .logtext import log_safe
from .operation import Operation, RawResponse
from .params import (
    Location,
    Param,
    Params,
    Pattern,
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
    "AfterSuccess",
    "Api",
    "ApiKey",
    "ApiKeyChecker",
    "BearerJWT",
    "Call",
    "Cookie",
    "Cors",
    "ErrorBody",
    "ExceptionHandler",
    "Group",
    "HealthCheck",
    "HealthReport",
    "HttpError",
    "InvalidCredential",
    "Location",
    "Operation",
    "Param",
    "Params",
    "Pattern",
    "Principal",
    "Probe",
    "RawResponse",
    "RecordRequest",
    "Reply",
    "Required",
    "TokenVerifier",
    "cookie",
    "error_middleware",
    "header",
    "json_response",
    "layer_error",
    "log_safe",
    "normalise_origin",
    "path",
    "pattern",
    "query",
    "required",
    "required_by_operation",
    "service_error",
    "wire_field",
]
