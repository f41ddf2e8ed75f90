"""The MCP methods this server answers: the handshake, ping and the two tools.

Stateless: there is no session, so every request names its protocol version itself (the
`MCP-Protocol-Version` header, checked by the transport) and `initialize` only negotiates it.
Requests are parsed and results serialised by the SDK's per-version wire maps (`mcp.types.methods`),
so the protocol shapes come from the official schema, not from hand-written dicts.
"""
import logging
from collections.abc import Callable

import mcp.types as types
from mcp.types import methods as wire
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

from memory.mcp.tools import UnknownTool, tool_call, tool_list
from tenancy.authentication import ApiPrincipal

logger = logging.getLogger(__name__)

__all__ = ["SUPPORTED_VERSIONS", "handle_request", "negotiate_version"]

# The versions reachable by the initialize handshake. The per-request-envelope era (2026-07-28,
# `server/discover`) is not served: an auto-negotiating client falls back to `initialize`.
SUPPORTED_VERSIONS: tuple[str, ...] = tuple(HANDSHAKE_PROTOCOL_VERSIONS)

SERVER_INFO = types.Implementation(name="memory-service", title="Memory service", version="1.0.0")
INSTRUCTIONS = (
    "Long-term memory of the user this connection acts for. Call recall_memory to look up what the user "
    "told you before (preferences, facts, events); call get_context to get the budgeted context for the "
    "next turn of a conversation. Both tools are read-only; identity comes from the connection."
)


def negotiate_version(requested: str) -> str:
    return requested if requested in SUPPORTED_VERSIONS else LATEST_HANDSHAKE_VERSION


def _initialize(principal: ApiPrincipal, request: types.InitializeRequest) -> types.InitializeResult:
    return types.InitializeResult(
        protocol_version=negotiate_version(request.params.protocol_version),
        capabilities=types.ServerCapabilities(tools=types.ToolsCapability(list_changed=False)),
        server_info=SERVER_INFO, instructions=INSTRUCTIONS,
    )


def _ping(principal: ApiPrincipal, request: types.PingRequest) -> types.EmptyResult:
    return types.EmptyResult()


def _list_tools(principal: ApiPrincipal, request: types.ListToolsRequest) -> types.ListToolsResult:
    return types.ListToolsResult(tools=tool_list())  # three tools: one page, no cursor


def _call_tool(principal: ApiPrincipal, request: types.CallToolRequest) -> types.CallToolResult:
    return tool_call(principal, request.params.name, request.params.arguments)


HANDLERS: dict[str, Callable[[ApiPrincipal, types.Request], types.Result]] = {
    "initialize": _initialize,
    "ping": _ping,
    "tools/list": _list_tools,
    "tools/call": _call_tool,
}


def _error(request_id, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


def _describe(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in exc.errors()[:5])


def handle_request(principal: ApiPrincipal, message: types.JSONRPCRequest,
                   version: str) -> types.JSONRPCResponse | types.JSONRPCError:
    """Answer one request at `version`, which the transport has already checked (ignored for initialize)."""
    method = message.method
    handler = HANDLERS.get(method)
    if handler is None:
        return _error(message.id, types.METHOD_NOT_FOUND, f"Method not found: {method}")
    if method == "initialize":
        version = LATEST_HANDSHAKE_VERSION  # to validate the request; the result is serialised at the negotiated one
    try:
        request = wire.parse_client_request(method, version, message.params)
    except KeyError:  # the method does not exist at this protocol version
        return _error(message.id, types.METHOD_NOT_FOUND, f"Method not found at {version}: {method}")
    except ValidationError as exc:
        return _error(message.id, types.INVALID_PARAMS, f"Invalid params for {method}: {_describe(exc)}")
    try:
        result = handler(principal, request)
    except UnknownTool as exc:
        return _error(message.id, types.INVALID_PARAMS, f"Unknown tool: {exc}")
    if isinstance(result, types.InitializeResult):
        version = result.protocol_version
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    # The per-version serialiser drops what `version` does not define (e.g. the 2026 `resultType`).
    data = wire.serialize_server_result(method, version, dumped)
    return types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=data)
