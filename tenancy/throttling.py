from rest_framework.throttling import SimpleRateThrottle


class ApiKeyRateThrottle(SimpleRateThrottle):
    """Per-API-key rate limit on the shared cache (Redis in the service profile)."""

    scope = "api_key"

    def get_cache_key(self, request, view):
        key = getattr(request, "auth", None)
        if key is None or not hasattr(key, "prefix"):
            return None
        return self.cache_format % {"scope": self.scope, "ident": key.prefix}
