"""Mem0's entity ids on our model (docs/mem0.md, "Mapping").

`user_id` is the acting user (identity.py). `agent_id` and `run_id` name the conversation the
messages of an add are appended to: one conversation per (user, agent_id, run_id), owned by the
user, with `external_id = "mem0|<user hash>|<agent_id>|<run_id>"` (either part may be empty).
A memory belongs to an agent/run when it was derived from, or stored into, one of its
conversations (its `conversation` or any of its sources). Filters this model cannot answer are
refused with a 400 naming them.
"""
import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, time
from datetime import timezone as dt_timezone

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils.dateparse import parse_date, parse_datetime

from conversations.models import Conversation
from conversations.selectors import conversations_keyed
from conversations.services import conversation_create
from memory.mem0.identity import Mem0BadRequest
from memory.models import Memory, MemorySource
from tenancy.models import Org

# The documented ASCII alphabet, spelled out (`\w` is Unicode); no "|": it separates the parts of the
# conversation key. Compared exactly, as every identifier (tenancy/identifiers.py).
ID_RE = re.compile(r"^[A-Za-z0-9_.@:+\-]{1,80}\Z", re.ASCII)
ENTITY_KEYS = ("user_id", "agent_id", "run_id")
DATE_KEYS = ("created_at", "updated_at")
DATE_OPS = ("gte", "gt", "lte", "lt")
SUPPORTED = ", ".join((*ENTITY_KEYS, *DATE_KEYS, "AND"))


@dataclass
class Filters:
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    dates: list[tuple[str, str, datetime]] = field(default_factory=list)  # (field, op, value)

    @property
    def scoped(self) -> bool:
        return self.agent_id is not None or self.run_id is not None


def check_id(value, where: str) -> str:
    if not isinstance(value, str) or not ID_RE.match(value):
        raise Mem0BadRequest(f"{where}: must be 1-80 characters of A-Z a-z 0-9 _ . @ : + - (ASCII only).")
    return value


def parse_when(value, where: str, *, end: bool = False) -> datetime:
    """ISO date or datetime, or a Unix timestamp. A bare date as an upper bound means its end."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, tz=dt_timezone.utc)
        except (OverflowError, OSError, ValueError):  # NaN, or beyond the years a datetime holds
            raise Mem0BadRequest(f"{where}: not a representable Unix timestamp.")
    if isinstance(value, str):
        parsed = parse_datetime(value)
        if parsed is not None:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt_timezone.utc)
        day = parse_date(value)
        if day is not None:
            return datetime.combine(day, time.max if end else time.min, tzinfo=dt_timezone.utc)
    raise Mem0BadRequest(f"{where}: must be an ISO 8601 date or datetime, or a Unix timestamp.")


def _set(filters: Filters, key: str, value: str, where: str) -> None:
    current = getattr(filters, key)
    if current is not None and current != value:
        raise Mem0BadRequest(f"{where}: conflicts with {key}={current!r} given elsewhere in the request.")
    setattr(filters, key, value)


def parse_filters(raw, *, where: str = "filters", into: Filters | None = None) -> Filters:
    filters = into or Filters()
    if raw is None:
        return filters
    if not isinstance(raw, dict):
        raise Mem0BadRequest(f"{where}: must be an object.")
    for key, value in raw.items():
        here = f"{where}.{key}" if where else key
        if key == "AND":
            if not isinstance(value, list) or not all(isinstance(part, dict) for part in value):
                raise Mem0BadRequest(f"{here}: must be a list of objects.")
            for i, part in enumerate(value):
                parse_filters(part, where=f"{here}[{i}]", into=filters)
        elif key in ENTITY_KEYS:
            if value == "*":  # Mem0's wildcard: any value, i.e. no restriction on this key
                continue
            if isinstance(value, dict):
                raise Mem0BadRequest(f"{here}: operators ({', '.join(map(str, value))}) are not supported; "
                                     "give one exact id.")
            if key == "user_id":
                if not isinstance(value, str):
                    raise Mem0BadRequest(f"{here}: must be a string.")
            else:
                check_id(value, here)
            _set(filters, key, value, here)
        elif key in DATE_KEYS:
            if not isinstance(value, dict) or not value:
                raise Mem0BadRequest(f"{here}: must be an object of {', '.join(DATE_OPS)}.")
            for op, bound in value.items():
                if op not in DATE_OPS:
                    raise Mem0BadRequest(f"{here}.{op}: not supported (supported: {', '.join(DATE_OPS)}).")
                filters.dates.append((key, op, parse_when(bound, f"{here}.{op}", end=op in ("lte", "gt"))))
        else:
            raise Mem0BadRequest(f"{here}: filter not supported (supported: {SUPPORTED}).")
    return filters


# ------------------------------------------------------------------------------------------- conversations

def _prefix(user_id: str) -> str:
    return f"mem0|{hashlib.sha256(user_id.encode()).hexdigest()[:16]}|"


def conversation_for(*, org: Org, user_id: str, agent_id: str | None, run_id: str | None) -> Conversation:
    key = f"{_prefix(user_id)}{agent_id or ''}|{run_id or ''}"
    title = f"mem0 agent={agent_id or '-'} run={run_id or '-'}"
    conversation, _ = conversation_create(org=org, owner_user=user_id, external_id=key, title=title)
    return conversation


def agent_and_run(external_id: str | None) -> tuple[str | None, str | None]:
    if not external_id or not external_id.startswith("mem0|"):
        return None, None
    parts = external_id.split("|")
    if len(parts) != 4:
        return None, None
    return parts[2] or None, parts[3] or None


def conversations_matching(*, org: Org, user_id: str, filters: Filters) -> QuerySet[Conversation]:
    head = _prefix(user_id)
    if filters.agent_id is not None and filters.run_id is not None:
        return conversations_keyed(org=org, owner_user=user_id, heads=[head], exact=f"{head}{filters.agent_id}|{filters.run_id}")
    if filters.agent_id is not None:
        return conversations_keyed(org=org, owner_user=user_id, heads=[head, f"{head}{filters.agent_id}|"])
    if filters.run_id is not None:
        return conversations_keyed(org=org, owner_user=user_id, heads=[head], tail=f"|{filters.run_id}")
    return conversations_keyed(org=org, owner_user=user_id, heads=[head])


def apply_filters(qs: QuerySet[Memory], *, org: Org, user_id: str, filters: Filters) -> QuerySet[Memory]:
    """Narrow memories to the agent/run and date bounds of the filters."""
    if filters.scoped:
        conversations = conversations_matching(org=org, user_id=user_id, filters=filters).values("id")
        from_them = MemorySource.objects.filter(memory=OuterRef("pk"), conversation_id__in=conversations)
        qs = qs.filter(Q(conversation_id__in=conversations) | Exists(from_them))
    for name, op, value in filters.dates:
        qs = qs.filter(**{f"{name}__{op}": value})
    return qs
