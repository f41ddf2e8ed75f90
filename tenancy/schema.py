"""The error responses of the OpenAPI schema (drf-spectacular documents only the success codes).

Every API view answers errors in one of two shapes, whatever the app: `{"detail", "code"?}` (DRF's
exceptions, our 409/503 bodies) or field errors `{field: [messages]}` (serializer validation, nested
for nested fields). The postprocessing hook adds them once, by what an operation can meet, instead of
repeating them in every `extend_schema`; a view that can answer 409 declares it with `CONFLICT`.
No 403: a foreign or unreadable object is a 404, so its existence is never revealed.
"""
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

__all__ = ["CONFLICT", "ERROR_REF", "IDEMPOTENCY_KEY", "add_error_responses"]

ERROR_REF = {"$ref": "#/components/schemas/Error"}
CONFLICT = OpenApiResponse(response=ERROR_REF, description="Conflict with the stored state (see `detail`).")
IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key", str, location=OpenApiParameter.HEADER, required=False,
    description="Makes a retry safe: a repeat with the same key (same user and endpoint, within "
                "IDEMPOTENCY_RETENTION_HOURS) answers the first response and stores nothing; the same key with "
                "another body is refused with 422. See docs/api.md, Retries.")

SCHEMAS = {
    "Error": {
        "type": "object",
        "required": ["detail"],
        "properties": {
            "detail": {"type": "string", "description": "What went wrong, for a person."},
            "code": {"type": "string", "description": "Machine-readable, when given (e.g. `conflict`)."},
            "limit": {"type": "integer", "description": "The limit that was exceeded, when a limit was."},
        },
    },
    "FieldErrors": {
        "type": "object",
        "description": "Field name → its messages: a list of strings, an object for a nested field, a list "
                       "with one entry per item for a list of objects. `non_field_errors` is about the body as "
                       "a whole; `X-Memory-User` about that header.",
        "additionalProperties": {"anyOf": [{"type": "array", "items": {}}, {"type": "object"}]},
    },
}


def _response(description: str, schema: dict, headers: dict | None = None) -> dict:
    body = {"description": description, "content": {"application/json": {"schema": schema}}}
    if headers:
        body["headers"] = headers
    return body


RESPONSES = {
    "BadRequest": _response(
        "Invalid request: field errors, a malformed JSON body, or a missing or malformed X-Memory-User header.",
        {"anyOf": [ERROR_REF, {"$ref": "#/components/schemas/FieldErrors"}]}),
    "Unauthorized": _response(
        "No API key, or an unknown or revoked one.", ERROR_REF,
        {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "The scheme to authenticate with."}}),
    "NotFound": _response(
        "An id in the path or body names nothing this user may read (another org's, unknown and unreadable "
        "objects look alike), or the page cursor is invalid.", ERROR_REF),
    "UnsupportedMediaType": _response("The body is not `application/json`.", ERROR_REF),
    "ContentTooLarge": _response("The body is larger than MAX_REQUEST_BYTES (`code`: `request_too_large`, "
                                 "`limit`: the limit in bytes); nothing was stored.", ERROR_REF),
    "TooManyRequests": _response(
        "The API key's rate limit is used up (shared by REST and MCP).", ERROR_REF,
        {"Retry-After": {"schema": {"type": "string", "pattern": "^[0-9]+$"},
                         "description": "Seconds until the next request may pass."}}),
}


def add_error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"])."""
    components = result.setdefault("components", {})
    components.setdefault("schemas", {}).update(SCHEMAS)
    components.setdefault("responses", {}).update(RESPONSES)
    for path, path_item in result.get("paths", {}).items():
        for operation in path_item.values():
            has_body = "requestBody" in operation
            needed = {"400": "BadRequest", "401": "Unauthorized", "429": "TooManyRequests"}
            # Ids in the path or body may name nothing readable; DRF answers an invalid cursor with 404 too.
            has_cursor = any(p.get("name") == "cursor" for p in operation.get("parameters", []))
            if "{" in path or has_body or has_cursor:
                needed["404"] = "NotFound"
            if has_body:
                needed["413"] = "ContentTooLarge"
                needed["415"] = "UnsupportedMediaType"
            responses = operation.setdefault("responses", {})
            for code, name in needed.items():
                responses.setdefault(code, {"$ref": f"#/components/responses/{name}"})
    return result
