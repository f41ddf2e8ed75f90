"""What context assembly (memory/context/) needs of one conversation, read in one call: its window (the
messages with their tool-call pairs, as a plan whose newest units are priced up to the room the window
may take), its task state, and the rolling summary of what no longer fits. Memory asks for these here,
never of the models."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from common.plain_reads import plain_instances
from conversations.models import Conversation, HistorySummary, TaskState
from conversations.summaries import summary_covering
from conversations.window import WindowMessage, WindowPlan, WindowUnit
from conversations.window_cache import window_messages


@dataclass
class Summarised:
    """A summary standing for the older messages, and the window it leaves verbatim."""
    row: HistorySummary
    reused: bool
    later: WindowPlan  # the messages after the summary's reach
    summarised: list[WindowMessage] = field(default_factory=list)  # the messages it stands for


@dataclass
class ConversationContext:
    conversation: Conversation
    at: datetime | None
    window: WindowPlan  # the unredacted messages as of `at`: a tool result travels with its call
    newest: list[WindowUnit]  # the window's newest units, newest first, priced up to the room
    task_states: list[TaskState]  # newest first, then by key

    def summary(self, *, placed: int, kept: int, budget: int) -> Summarised | None:
        """The summary (reused, or rolled and stored: conversations/summaries.py) of the messages that fall
        out when the window is its `placed` newest units, within `budget` tokens. It may reach a little
        further, never into the `kept` newest units (they stay verbatim). None when nothing falls out or
        no summary is made."""
        last_dropped = self.window.newest_dropped_seq(placed)
        if not last_dropped or budget <= 0:
            return None
        protected = self.window.newest(kept)
        row, reused = summary_covering(conversation=self.conversation, last_dropped_seq=last_dropped, budget=budget,
                                       before_seq=protected[0].seq if protected else None)
        if row is None or not row.text:
            return None
        return Summarised(row, reused, self.window.after(row.covers_until_seq),
                          [m for m in self.window.messages if m.seq <= row.covers_until_seq])


def conversation_context(*, conversation: Conversation, at: datetime | None, query: str,
                         tool_result_max_tokens: int, room: int) -> ConversationContext:
    """`conversation` must come from a fresh read (its message count and window version validate the
    window cache). An oversized tool result is cut to what `query` asks about (conversations/window.py).
    The window is priced up to `room` here, the most it can take, so the caller places its units without
    asking again; an older unit cannot fit and stays unpriced."""
    window = WindowPlan(window_messages(conversation, at), query=query, tool_result_max_tokens=tool_result_max_tokens)
    newest = window.priced(room)
    # A plain statement (common/plain_reads.py): every context call reads these few rows, and compiling
    # the ORM query cost more than the read.
    states = plain_instances(TaskState, None, conversation=conversation.id)
    return ConversationContext(conversation, at, window, newest,
                               sorted(states, key=lambda t: (-t.updated_at.timestamp(), t.key)))
