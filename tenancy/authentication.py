"""API-key authentication: the org comes from the key, the acting user from a trusted header.

Agent services are trusted to name the end user they act for (X-Memory-User); nothing in a
request body or tool argument can change either identity.
"""
from dataclasses import dataclass

from django.conf import settings
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.permissions import BasePermission

from tenancy.identifiers import USER_ID_MESSAGE, USER_ID_RE
from tenancy.models import ApiKey, Org
from tenancy.services import api_key_verify

__all__ = ["USER_ID_RE", "ApiKeyAuthentication", "ApiPrincipal", "HasOrgAndUser", "acting_user_from"]


@dataclass
class ApiPrincipal:
    org: Org
    api_key: ApiKey
    user_id: str | None

    is_authenticated = True
    is_anonymous = False


def acting_user_from(request) -> str | None:
    raw = request.META.get(settings.API_USER_HEADER)
    if raw is None:
        return None
    if not USER_ID_RE.match(raw):
        raise exceptions.ValidationError({"X-Memory-User": [USER_ID_MESSAGE]})
    return raw


class ApiKeyAuthentication(BaseAuthentication):
    keywords: tuple[bytes, ...] = (b"bearer",)  # Authorization schemes that carry the key

    def authenticate(self, request):
        auth = get_authorization_header(request).split()
        raw = None
        if auth and auth[0].lower() in self.keywords and len(auth) == 2:
            raw = auth[1].decode(errors="replace")
        elif request.META.get("HTTP_X_API_KEY"):
            raw = request.META["HTTP_X_API_KEY"]
        if raw is None:
            return None
        key = api_key_verify(raw_key=raw)
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        return ApiPrincipal(org=key.org, api_key=key, user_id=acting_user_from(request)), key

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="memory"'


class HasOrgAndUser(BasePermission):
    """Every agent endpoint needs both the key (org) and the acting user header."""

    def has_permission(self, request, view) -> bool:
        principal = request.user
        if not isinstance(principal, ApiPrincipal):
            return False
        if getattr(view, "user_optional", False):
            return True
        if principal.user_id is None:
            raise exceptions.ValidationError({"X-Memory-User": ["This header is required."]})
        return True
