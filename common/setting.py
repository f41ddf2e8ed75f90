"""One Django setting, read at call time.

Text, token counting, extraction and the encoders are also used by scripts, benches and pure-Python
tests where settings are not configured, so a missing configuration gives the caller's default
instead of raising, and importing this module never configures Django."""
from typing import Any


def setting(name: str, default: Any) -> Any:
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        return getattr(settings, name, default)
    except ImproperlyConfigured:
        return default
