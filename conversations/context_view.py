"""What context assembly (memory/context/) needs of one conversation, behind one selector: its task
state, its window (the messages with their tool-call pairs, as a plan priced one unit at a time), and
the rolling summary of what no longer fits. Memory asks for these here, never of the models."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from common.plain_reads import plain_instances
from conversations.models import Conversation, HistorySummary, TaskState
from conversations.summaries import summary_covering
from conversations.window import WindowPlan
from conversations.window_cache import window_messages


@dataclass
class ConversationContext:
    conversation: Conversation
    at: datetime | None = None

    def task_states(self) -> list[TaskState]:
        """The conversation's task state, newest first, then by key."""
        # A plain statement (common/plain_reads.py): every context call reads these few rows, and compiling
        # the ORM query cost more than the read.
        states = plain_instances(TaskState, None, conversation=self.conversation.id)
        return sorted(states, key=lambda t: (-t.updated_at.timestamp(), t.key))

    def window(self, *, query: str, tool_result_max_tokens: int) -> WindowPlan:
        """The unredacted messages as of `at`, as a plan: a tool result travels with its call, and an
        oversized one is cut to what `query` asks about (conversations/window.py)."""
        return WindowPlan(window_messages(self.conversation, self.at), query=query,
                          tool_result_max_tokens=tool_result_max_tokens)

    def summary(self, *, last_dropped_seq: int, budget: int,
                before_seq: int | None = None) -> tuple[HistorySummary | None, bool]:
        """A summary of the messages up to `last_dropped_seq` (reused, or rolled and stored:
        conversations/summaries.py). Returns (summary, reused)."""
        return summary_covering(conversation=self.conversation, last_dropped_seq=last_dropped_seq, budget=budget,
                                before_seq=before_seq)


def conversation_context(*, conversation: Conversation, at: datetime | None = None) -> ConversationContext:
    """`conversation` must come from a fresh read (its message count and window version validate the
    window cache)."""
    return ConversationContext(conversation, at)
