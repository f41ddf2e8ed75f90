"""Who made an API request, as the audit log and version history record it."""


def request_actor(request, *, protocol: str = "api", user_id: str | None = None) -> str:
    """`<protocol>:<key prefix>:<user>`: the API key (by its public prefix, never the secret) and the
    user it acted for, so an audit row names both without holding a credential. The Mem0 protocol
    names the user in the body, not in the key, so its views pass `user_id`."""
    return f"{protocol}:{request.auth.prefix}:{request.user.user_id if user_id is None else user_id}"
