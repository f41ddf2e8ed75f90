"""A context request, its answer, and what the caller brings, priced once: the evidence passages, and
what the request costs before any section (the system prompt with the tool schemas, and the new
message, never cut silently)."""
import json
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from conversations.models import Conversation
from conversations.tokens import MESSAGE_OVERHEAD_TOKENS, REPLY_PRIMING_TOKENS, count_message_tokens, count_tokens, truncate_to_tokens
from memory.context.evidence import Evidence, EvidenceUnits, evidence_units
from memory.context.sections import Section
from tenancy.models import Org


class ContextBudgetError(Exception):
    """The request cannot be served within its budget (the view answers 400 naming `field`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass
class ContextRequest:
    org: Org
    user_id: str
    conversation: Conversation
    message: str
    budget: int | None = None
    system: str = ""
    tools: list[dict] = field(default_factory=list)
    at: datetime | None = None
    k: int | None = None
    recent_only: bool = False
    section_budgets: dict[str, float] = field(default_factory=dict)  # fractions of the room after system + message
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class ContextResult:
    sections: list[Section]
    messages: list[dict]
    total_tokens: int
    budget: int
    recall_degraded: bool = False
    message_truncated: bool = False
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class Inputs:
    """What the caller brings, priced once."""
    system: dict | None
    message: dict
    truncated: bool
    tokens: int  # the fixed cost: both messages and the reply priming
    system_tokens: int
    message_tokens: int
    evidence: EvidenceUnits  # placed later by its share, like any section


def priced_inputs(req: ContextRequest, budget: int) -> Inputs:
    """The evidence passages, each cut to the passage cap and placed later by its share like any section;
    and the system prompt and new message, never cut silently: a system prompt that leaves no room for
    the message frame is refused; a message that does not fit beside it is cut and flagged."""
    evidence = evidence_units(req.evidence, max_passage_tokens=settings.CONTEXT_EVIDENCE_MAX_TOKENS)
    text = req.system or ""
    if req.tools:
        text += "\nTools:\n" + json.dumps(req.tools, ensure_ascii=False, separators=(",", ":"))
    system = {"role": "system", "content": text} if text else None
    system_tokens = count_message_tokens(system) if system else 0
    room = budget - REPLY_PRIMING_TOKENS - system_tokens - MESSAGE_OVERHEAD_TOKENS
    if room < 0:
        what = "The system prompt and tool schemas take" if req.tools else "The system prompt takes"
        raise ContextBudgetError("system", f"{what} {system_tokens} tokens; the budget is {budget}.")
    content = req.message
    truncated = count_tokens(content) > room
    if truncated:
        content = truncate_to_tokens(content, room)
    message = {"role": "user", "content": content}
    message_tokens = count_message_tokens(message)
    tokens = REPLY_PRIMING_TOKENS + system_tokens + message_tokens
    if tokens > budget:  # a re-tokenised cut can be a token longer: shrink until it fits
        content = truncate_to_tokens(content, room - (tokens - budget))
        message, truncated = {"role": "user", "content": content}, True
        message_tokens = count_message_tokens(message)
        tokens = REPLY_PRIMING_TOKENS + system_tokens + message_tokens
    # Rendering reports both counts per section: kept here so they are counted once.
    return Inputs(system=system, message=message, truncated=truncated, tokens=tokens,
                  system_tokens=system_tokens, message_tokens=message_tokens, evidence=evidence)
