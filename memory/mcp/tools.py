"""The read-only MCP tools: `recall_memory`, `get_context` and `entity_neighbours`.

A tool's input schema is a contract in both directions: tools/list publishes it and every call is
checked against it, unknown arguments included (`additionalProperties: false`). The REST input
serializer then applies the REST endpoint's own limits, so the two surfaces cannot drift apart.
Identity is never an argument: handlers get the `ApiPrincipal` the transport authenticated.
"""
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp.types as types
from django.conf import settings
from django.http import Http404
from jsonschema import Draft202012Validator
from rest_framework.serializers import Serializer
from rest_framework.utils.encoders import JSONEncoder

from conversations.models import Conversation
from conversations.selectors import conversation_get
from memory.api import serializers as s
from memory.api.presenters import context_data, context_request, recall_body
from memory.choices import MemoryKind
from memory.context import ContextBudgetError, assemble_context
from memory.recall import RecallQuery, recall
from tenancy.authentication import ApiPrincipal

logger = logging.getLogger(__name__)

__all__ = ["ToolError", "UnknownTool", "tool_call", "tool_list"]

IDENTITY_HINT = "Identity comes from the connection (API key and X-Memory-User header), never from tool arguments."


class ToolError(Exception):
    """Reported as a tool result with isError set, so the calling model can read it and correct itself."""


class UnknownTool(Exception):
    pass


# --------------------------------------------------------------------------- schemas
# Built per call, not at import: the limits are settings.

def _recall_input_schema() -> dict:
    return {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 4000,
                      "description": "What to look for: a question or topic, in the user's own language."},
            "k": {"type": "integer", "minimum": 1, "maximum": settings.MAX_RECALL_K, "default": 5,
                  "description": "Return at most this many memories."},
            "kinds": {"type": ["array", "null"], "items": {"type": "string", "enum": MemoryKind.values},
                      "description": "Only memories of these kinds (default: all)."},
            "at": {"type": ["string", "null"], "format": "date-time",
                   "description": "Reference time, ISO 8601: recall what was known and valid then (default: now)."},
            "conversation_id": {
                "type": ["integer", "null"],
                "description": "The conversation in progress: memories scoped to its task become eligible."},
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def _context_input_schema() -> dict:
    return {
        "type": "object",
        "properties": {
            "conversation_id": {"type": "integer", "description": "The conversation to build the next turn for."},
            "message": {"type": "string", "maxLength": settings.MAX_MESSAGE_CHARS,
                        "description": "The new user message."},
            "budget": {"type": ["integer", "null"], "minimum": 64, "maximum": settings.MAX_CONTEXT_BUDGET,
                       "description": f"Total token budget, a hard cap (default {settings.CONTEXT_DEFAULT_BUDGET})."},
            "evidence": {
                "type": ["array", "null"], "maxItems": settings.CONTEXT_EVIDENCE_MAX_ITEMS,
                "description": "Your retrieval results for this turn (best first, or ranked by score): placed right "
                               "after the system prompt and numbered [1..n] so the answer can cite them.",
                "items": {"type": "object", "additionalProperties": False, "required": ["id", "text", "source"],
                          "properties": {
                              "id": {"type": ["string", "integer"], "description": "Your id; reported back."},
                              "text": {"type": "string", "minLength": 1, "maxLength": settings.CONTEXT_EVIDENCE_MAX_CHARS},
                              "source": {"type": "string", "maxLength": 500},
                              "score": {"type": ["number", "null"]}}}},
        },
        "required": ["conversation_id", "message"],
        "additionalProperties": False,
    }


_DATETIME = {"type": ["string", "null"], "format": "date-time"}
_RECALL_ITEM = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"}, "kind": {"type": "string"}, "assertion": {"type": "string"},
        "content": {"type": "string"}, "valid_from": _DATETIME, "valid_to": _DATETIME, "occurred_at": _DATETIME,
        "created_at": _DATETIME, "version": {"type": "integer"}, "score": {"type": "number"},
        "as": {"type": "string", "enum": ["current", "history"],
               "description": "history: an older statement a newer recalled item on the same subject replaces; "
                              "present it as what held before, with its date."},
        "entity_ids": {"type": "array", "items": {"type": "string"}},
        "sources": {"type": "array", "items": {"type": "object", "properties": {
            "message_id": {"type": ["integer", "null"]}, "conversation_id": {"type": ["integer", "null"]},
            "ref": {"type": ["string", "null"]}}}},
    },
    "required": ["id", "kind", "content", "score", "sources", "as"],
}
RECALL_OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": _RECALL_ITEM}, "degraded": {"type": "boolean"},
                   "degraded_reason": {"type": ["string", "null"]}},
    "required": ["items", "degraded", "degraded_reason"],
}
_RELATED = {"type": "object", "properties": {"type": {"type": "string"}, "external_id": {"type": "string"},
                                            "name": {"type": "string"}}, "required": ["type", "external_id", "name"]}
NEIGHBOURS_OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "entity": _RELATED,
        "neighbours": {"type": "array", "items": {"type": "object", "properties": {
            "relation_id": {"type": "integer"}, "type": {"type": "string"}, "direction": {"enum": ["out", "in"]},
            "entity": _RELATED, "valid_from": {"type": ["string", "null"]}, "valid_to": {"type": ["string", "null"]},
            "source": {"type": "string"}, "current": {"type": "boolean"}}}},
    },
    "required": ["entity", "neighbours"],
}


def _neighbours_input_schema() -> dict:
    return {
        "type": "object",
        "properties": {
            "type": {"type": "string", "minLength": 1, "maxLength": 50, "description": "The entity's type (asset, workorder, ...)."},
            "external_id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "The entity's stable business id."},
            "include_history": {"type": "boolean", "default": False,
                                "description": "Also list relations that have ended (dated by valid_to)."},
            "relation_type": {"type": "string", "minLength": 1, "maxLength": 50, "description": "Only relations of this type."},
        },
        "required": ["type", "external_id"],
        "additionalProperties": False,
    }


CONTEXT_OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "budget": {"type": "integer"}, "total_tokens": {"type": "integer"}, "recall_degraded": {"type": "boolean"},
        "message_truncated": {"type": "boolean"},
        "sections": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "tokens": {"type": "integer"}, "text": {"type": "string"},
            "included": {"type": "array"}, "dropped": {"type": "array"}, "truncated": {"type": "array"}},
            "required": ["name", "tokens", "text", "included", "dropped", "truncated"]}},
        "messages": {"type": "array", "items": {"type": "object", "properties": {"role": {"type": "string"}},
                                                "required": ["role"]}},
    },
    "required": ["budget", "total_tokens", "recall_degraded", "message_truncated", "sections", "messages"],
}


# --------------------------------------------------------------------------- argument checks

def _schema_errors(schema: dict, arguments: dict) -> list[str]:
    errors, unknown = [], []
    for error in Draft202012Validator(schema).iter_errors(arguments):
        path = list(error.absolute_path)
        if path:  # inside an argument (an evidence item): name the argument and the item
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[1:])
            problem = (f"missing {error.message.split(' is a required')[0]}." if error.validator == "required"
                       else f"unknown field(s) {sorted(set(error.instance) - set(error.schema.get('properties', {})))}."
                       if error.validator == "additionalProperties" else _problem(error))
            errors.append(f"Invalid argument '{path[0]}'{where}: {problem}")
        elif error.validator == "additionalProperties":
            unknown += sorted(set(error.instance) - set(schema["properties"]))
        elif error.validator == "required":
            errors.append(f"Missing argument {error.message.split(' is a required')[0]}.")
        else:
            name = error.absolute_path[0] if error.absolute_path else "arguments"
            errors.append(f"Invalid argument '{name}': {_problem(error)}")
    errors = sorted(errors) + [f"Unknown argument '{name}'." for name in unknown]
    if any(word in name.lower() for name in unknown for word in ("user", "org", "tenant", "actor", "key")):
        errors.append(IDENTITY_HINT)
    return errors


def _problem(error) -> str:
    """Say what is wrong without echoing the value back (it may be a 100 kB message)."""
    rule, kind = error.validator_value, error.validator
    if kind == "type":
        return f"must be of type {' or '.join(rule) if isinstance(rule, list) else rule}."
    if kind in ("maxLength", "minLength"):
        return f"at {'most' if kind == 'maxLength' else 'least'} {rule} character(s)."
    if kind in ("maximum", "minimum"):
        return f"must be at {'most' if kind == 'maximum' else 'least'} {rule}."
    if kind == "enum":
        return f"must be one of {', '.join(map(str, rule))}."
    return error.message[:200]


def _validated(serializer_class: type[Serializer], arguments: dict) -> dict:
    """Run the REST endpoint's serializer, so the MCP tool enforces exactly its limits."""
    # JSON null means "not given" for every optional tool argument; the serializers want it absent.
    serializer = serializer_class(data={name: value for name, value in arguments.items() if value is not None})
    if not serializer.is_valid():
        messages = [f"Invalid argument '{name}': {' '.join(str(m) for m in _flat(problems))}"
                    for name, problems in sorted(serializer.errors.items())]
        raise ToolError(" ".join(messages))
    return serializer.validated_data


def _flat(problems) -> list:
    if isinstance(problems, dict):
        return [m for value in problems.values() for m in _flat(value)]
    if isinstance(problems, list):
        return [m for value in problems for m in _flat(value)]
    return [problems]


def _readable_conversation(principal: ApiPrincipal, conversation_id: int) -> Conversation:
    try:
        return conversation_get(org=principal.org, user_id=principal.user_id, conversation_id=conversation_id)
    except Http404:
        # Same words for another org's, another user's and a missing conversation: existence is never revealed.
        raise ToolError(f"Conversation {conversation_id} not found.") from None


# --------------------------------------------------------------------------- registry

@dataclass(frozen=True)
class ToolSpec:
    title: str
    description: str
    input_schema: Callable[[], dict]
    output_schema: dict
    handler: Callable[[ApiPrincipal, dict], dict]

    @property
    def name(self) -> str:
        return self.handler.__name__  # the tool is called as its handler is named: one name, not two

    def tool(self) -> types.Tool:
        # Every tool here only reads: the annotation says so to clients that read hints, the last
        # sentence of the description to the model.
        return types.Tool(
            name=self.name, title=self.title, description=f"{self.description} Read-only.",
            input_schema=self.input_schema(), output_schema=self.output_schema,
            annotations=types.ToolAnnotations(title=self.title, read_only_hint=True, open_world_hint=False),
        )


TOOLS: dict[str, ToolSpec] = {}  # filled by @_tool in definition order, which is the order tools/list shows


def _tool(*, title: str, description: str, input_schema: Callable[[], dict], output_schema: dict):
    def register(handler: Callable[[ApiPrincipal, dict], dict]) -> Callable[[ApiPrincipal, dict], dict]:
        spec = ToolSpec(title=title, description=description, input_schema=input_schema,
                        output_schema=output_schema, handler=handler)
        TOOLS[spec.name] = spec
        return handler
    return register


# --------------------------------------------------------------------------- handlers

@_tool(title="Recall memories", input_schema=_recall_input_schema, output_schema=RECALL_OUTPUT_SCHEMA,
       description="Search the acting user's long-term memory (preferences, facts, events, context, episodes). "
                   "Returns the best matches with their dates, sources and scores.")
def recall_memory(principal: ApiPrincipal, arguments: dict) -> dict:
    v = _validated(s.RecallInputSerializer, arguments)
    conversation_id = v.get("conversation_id")
    if conversation_id is not None:
        _readable_conversation(principal, conversation_id)
    result = recall(RecallQuery(
        org=principal.org, user_id=principal.user_id, query=v["query"], k=v["k"], kinds=v.get("kinds"),
        at=v.get("at"), conversation_id=conversation_id, include_episodes=v["include_episodes"]))
    return recall_body(result, explain=False)  # the body RecallApi returns (without explain)


@_tool(title="Assemble context", input_schema=_context_input_schema, output_schema=CONTEXT_OUTPUT_SCHEMA,
       description="Build the token-budgeted context for the next turn of a conversation: your evidence "
                   "(numbered for citation), task state, relevant memories, summary and recent messages, ending "
                   "with the new message; each section says what was included, dropped or truncated.")
def get_context(principal: ApiPrincipal, arguments: dict) -> dict:
    conversation_id = arguments["conversation_id"]
    v = _validated(s.ContextInputSerializer, {k: val for k, val in arguments.items() if k != "conversation_id"})
    conversation = _readable_conversation(principal, conversation_id)
    try:
        result = assemble_context(context_request(org=principal.org, user_id=principal.user_id,
                                                  conversation=conversation, v=v))
    except ContextBudgetError as exc:
        raise ToolError(f"Invalid argument '{exc.field}': {exc}") from None
    return context_data(result)  # the body ContextApi returns


@_tool(title="Entity neighbours", input_schema=_neighbours_input_schema, output_schema=NEIGHBOURS_OUTPUT_SCHEMA,
       description="List the business objects related to one entity (a work order's asset, an asset's model, "
                   "site and work orders), with each relation's type, direction and validity; only entities the "
                   "acting user may read.")
def entity_neighbours(principal: ApiPrincipal, arguments: dict) -> dict:
    from entities.api.serializers import NeighboursOutputSerializer
    from entities.policy import get_access_policy
    from entities.relations import entity_neighbours_visible
    from entities.selectors import entity_get

    try:
        entity = entity_get(org=principal.org, type=arguments["type"], external_id=arguments["external_id"])
        allowed = get_access_policy().allowed_ids(org_id=principal.org.id, user_id=principal.user_id, entity_ids={entity.id})
        if entity.id not in allowed:
            raise Http404
    except Http404:
        # The same words for a missing and a hidden entity: existence is never revealed.
        raise ToolError(f"Entity {arguments['type']}:{arguments['external_id']} not found.") from None
    out = entity_neighbours_visible(entity=entity, user_id=principal.user_id,
                                    include_history=arguments.get("include_history", False),
                                    type=arguments.get("relation_type"))
    return NeighboursOutputSerializer({"entity": entity, "neighbours": out}).data


# --------------------------------------------------------------------------- tools/list and tools/call

def tool_list() -> list[types.Tool]:
    return [spec.tool() for spec in TOOLS.values()]


def tool_call(principal: ApiPrincipal, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
    spec = TOOLS.get(name)
    if spec is None:
        raise UnknownTool(name)
    arguments = arguments or {}
    try:
        errors = _schema_errors(spec.input_schema(), arguments)
        if errors:
            raise ToolError(" ".join(errors))
        data = spec.handler(principal, arguments)
    except ToolError as exc:
        logger.info("mcp tool %s refused for org=%s key=%s", name, principal.org.id, principal.api_key.prefix)
        return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
    # Encode as DRF renders the REST response (ISO datetimes with Z), then read it back as plain JSON.
    text = json.dumps(data, cls=JSONEncoder, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=json.loads(text))
