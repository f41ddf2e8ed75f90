"""MCP Streamable HTTP transport in stateless JSON-response mode, as a plain Django view (WSGI-safe).

One POST carries one JSON-RPC message. A request is answered with `application/json`; a notification
or a response gets 202 and no body. There are no sessions (no `Mcp-Session-Id`) and no SSE streams,
so GET and DELETE are 405. Identity is the connection's: the API key and `X-Memory-User` header the
REST API takes, checked by the same `ApiKeyAuthentication`; nothing inside a message can change it.
"""
import logging
from urllib.parse import urlsplit

import mcp.types as types
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError
from rest_framework import exceptions
from rest_framework.request import Request

from memory.mcp.server import SUPPORTED_VERSIONS, handle_request
from tenancy.authentication import ApiKeyAuthentication, ApiPrincipal
from tenancy.db import DatabaseBusy, is_contention
from tenancy.parsers import loads_checked
from tenancy.throttling import ApiKeyRateThrottle

logger = logging.getLogger(__name__)

__all__ = ["mcp_endpoint"]

PROTOCOL_VERSION_HEADER = "MCP-Protocol-Version"
# Codes from JSON-RPC's implementation-defined band (-32000..-32019; the SDK keeps -32000/-32001 for itself).
AUTHENTICATION_FAILED = -32010
RATE_LIMITED = -32011
UNAVAILABLE = -32012


def _reply(message: BaseModel, status: int = 200, headers: dict | None = None) -> JsonResponse:
    # exclude_unset, not exclude_none: an error whose id could not be read must still say `"id": null`.
    return JsonResponse(message.model_dump(by_alias=True, mode="json", exclude_unset=True), status=status,
                        headers=headers)


def _rpc_error(status: int, code: int, message: str, *, request_id=None, data=None,
               headers: dict | None = None) -> JsonResponse:
    error = types.ErrorData(code=code, message=message, **({"data": data} if data is not None else {}))
    return _reply(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error), status, headers)


def _unauthorized(message: str) -> JsonResponse:
    return _rpc_error(401, AUTHENTICATION_FAILED, message,
                      headers={"WWW-Authenticate": ApiKeyAuthentication().authenticate_header(None)})


def _authenticate(request: HttpRequest) -> Request | JsonResponse:
    """The REST API's authentication, unchanged; every way it can fail is a 401 here."""
    drf_request = Request(request)
    try:
        found = ApiKeyAuthentication().authenticate(drf_request)
    except exceptions.AuthenticationFailed as exc:
        return _unauthorized(str(exc.detail))
    except exceptions.ValidationError as exc:  # a malformed X-Memory-User header
        problems = exc.detail if isinstance(exc.detail, dict) else {"X-Memory-User": exc.detail}
        return _unauthorized(" ".join(f"{name}: {' '.join(map(str, msgs))}" for name, msgs in problems.items()))
    if found is None:
        return _unauthorized("Authentication credentials were not provided: send Authorization: Bearer <API key>.")
    principal, key = found
    if principal.user_id is None:
        return _unauthorized("The X-Memory-User header is required: it names the user this agent acts for.")
    drf_request.user, drf_request.auth = principal, key
    return drf_request


def _foreign_origin(request: HttpRequest) -> bool:
    """DNS-rebinding guard the MCP spec asks for: a browser page may only call from this very host."""
    origin = request.headers.get("Origin")
    return origin is not None and urlsplit(origin).netloc != request.get_host()


def _request_id(raw) -> int | str | None:
    rid = raw.get("id") if isinstance(raw, dict) else None
    return rid if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)) else None


def _answer(request: HttpRequest, principal: ApiPrincipal) -> HttpResponse:
    if request.content_type != "application/json":
        return _rpc_error(415, types.INVALID_REQUEST, "Content-Type must be application/json.")
    if not request.accepts("application/json"):
        return _rpc_error(406, types.INVALID_REQUEST, "This endpoint answers application/json only (no SSE).")
    try:
        raw = loads_checked(request.body)  # also refuses deep nesting and lone surrogates (tenancy/parsers.py)
    except RequestDataTooBig:
        return _rpc_error(413, types.INVALID_REQUEST, "Request body too large.")
    except ValueError as exc:
        return _rpc_error(400, types.PARSE_ERROR, f"Parse error: {exc}")
    if isinstance(raw, list):
        return _rpc_error(400, types.INVALID_REQUEST, "JSON-RPC batches are not supported: send one message per POST.")
    try:
        message = types.jsonrpc_message_adapter.validate_python(raw, by_name=False)
    except PydanticValidationError:
        return _rpc_error(400, types.INVALID_REQUEST, "Not a JSON-RPC 2.0 message.", request_id=_request_id(raw))
    if not isinstance(message, types.JSONRPCRequest):
        return HttpResponse(status=202)  # notifications (initialized, cancelled) and responses: nothing to do
    version = request.headers.get(PROTOCOL_VERSION_HEADER, types.DEFAULT_NEGOTIATED_VERSION)
    if message.method != "initialize" and version not in SUPPORTED_VERSIONS:
        data = types.UnsupportedProtocolVersionErrorData(supported=list(SUPPORTED_VERSIONS), requested=version)
        return _rpc_error(400, types.UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported protocol version: {version}",
                          request_id=message.id, data=data.model_dump(mode="json"))
    logger.debug("mcp %s org=%s key=%s", message.method, principal.org.id, principal.api_key.prefix)
    return _reply(handle_request(principal, message, version))


@csrf_exempt  # API-key authenticated, no cookies: CSRF does not apply (as for DRF's APIView)
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _rpc_error(405, types.INVALID_REQUEST, "Method not allowed: this MCP endpoint is stateless and takes "
                          "POST only.", headers={"Allow": "POST"})
    if _foreign_origin(request):
        return _rpc_error(403, types.INVALID_REQUEST, "Origin not allowed.")
    try:
        drf_request = _authenticate(request)
        if isinstance(drf_request, HttpResponse):
            return drf_request
        throttle = ApiKeyRateThrottle()
        if not throttle.allow_request(drf_request, None):  # one budget per key, shared with the REST API
            wait = throttle.wait()
            return _rpc_error(429, RATE_LIMITED, "Rate limit exceeded for this API key.",
                              headers={"Retry-After": str(int(wait or 1) + 1)})
        return _answer(request, drf_request.user)
    except (OperationalError, InterfaceError, DatabaseBusy) as exc:
        if isinstance(exc, DatabaseBusy) or is_contention(exc):
            logger.warning("mcp: database busy: %s", type(exc).__name__)
            return _rpc_error(429, UNAVAILABLE, "The memory database is busy with other writes; nothing was "
                              "stored, retry.", headers={"Retry-After": "1"})
        # As the REST API: the system of record is unreachable, say so; never serve unchecked projections.
        logger.warning("mcp: database unavailable: %s", type(exc).__name__)
        return _rpc_error(503, UNAVAILABLE, "The memory database is unavailable; retry later.",
                          headers={"Retry-After": "5"})
    except DatabaseError as exc:
        logger.error("mcp: database error: %s", type(exc).__name__)
        return _rpc_error(503, UNAVAILABLE, "The memory database rejected the operation.")
    # Anything else is a bug: let Django answer 500 and report it as for any view.
