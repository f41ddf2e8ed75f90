"""Who is asking, on the Mem0 surface.

The org comes from the API key, as everywhere. The acting user comes from the Mem0 body's
`user_id` (or `filters.user_id`, or the `user_id` query parameter), but only for keys created with
the `mem0_compat` scope: naming a user in the request is the same trust as the X-Memory-User
header, so a key without that scope that names one gets 403. X-Memory-User still works for every
key and, when sent, pins the user: a body naming someone else is refused.
"""
from rest_framework import exceptions, status
from rest_framework.permissions import BasePermission

from tenancy.authentication import ApiKeyAuthentication, ApiPrincipal
from tenancy.identifiers import USER_ID_MESSAGE, USER_ID_RE
from tenancy.models import SCOPE_MEM0_COMPAT


class Mem0BadRequest(exceptions.APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "invalid"


class Mem0NotSupported(exceptions.APIException):
    status_code = status.HTTP_501_NOT_IMPLEMENTED
    default_code = "not_supported"


class Mem0TokenAuthentication(ApiKeyAuthentication):
    """`Authorization: Token <key>` as the Mem0 client sends it; Bearer and X-API-Key work too."""

    keywords = (b"token", b"bearer")

    def authenticate_header(self, request) -> str:
        return 'Token realm="memory"'


class HasApiKey(BasePermission):
    """The key is required; the user is resolved per endpoint (body, filters or header)."""

    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, ApiPrincipal)


def may_name_users(principal: ApiPrincipal) -> bool:
    return principal.api_key.has_scope(SCOPE_MEM0_COMPAT)


def acting_user(principal: ApiPrincipal, named: str | None, field: str = "user_id") -> str:
    """The user a request acts for. `named`: the user_id the request body/filters/query gave."""
    header = principal.user_id
    if named is not None:
        if not isinstance(named, str) or not USER_ID_RE.match(named):
            raise Mem0BadRequest(f"{field}: {USER_ID_MESSAGE}")
        if not may_name_users(principal):
            raise exceptions.PermissionDenied(
                f"{field}: this API key may not name the acting user in a request; create a key with the "
                f"'{SCOPE_MEM0_COMPAT}' scope, or send the X-Memory-User header instead.")
        if header is not None and header != named:
            raise exceptions.PermissionDenied(f"{field}: does not match the X-Memory-User header.")
        return named
    if header is not None:
        return header
    raise Mem0BadRequest(f"{field}: required (memories always belong to a user).")


def user_pin(principal: ApiPrincipal) -> str | None:
    """For requests by memory or event id, which name no user: the header user if sent; a
    mem0_compat key without it may reach any user of its org (it could name any of them anyway);
    any other key must send the header."""
    if principal.user_id is not None:
        return principal.user_id
    if may_name_users(principal):
        return None
    raise Mem0BadRequest("X-Memory-User: required for this API key (it has no 'mem0_compat' scope).")
