"""Placement (DESIGN §7): who gets room when the budget is short. Each part (evidence, task state,
preferences, recent messages, other memories, episodes, summary, older history) has a share of the
room; `allocate` (memory/context/budget.py) fills the shares in priority order and hands what is left
down. When older messages then fall out, the summary takes its share and stands for them."""
from dataclasses import dataclass, field

from django.conf import settings

from conversations.context_view import ConversationContext
from conversations.tokens import count_message_tokens
from conversations.window import WindowMessage, WindowPlan, WindowUnit
from memory.context.budget import Part, Stream, allocate
from memory.context.evidence import EVIDENCE_HEADER, EvidenceUnits
from memory.context.sections import EPISODE_HEADER, MEMORY_HEADER, TASK_HEADER, Lines, Section, frame

# Priority order of the shared parts, highest first. "history" is the window's older part: it has
# no share of its own (only what is left), and recent + history are one contiguous run of messages.
PRIORITY = ["evidence", "task_state", "preferences", "recent", "memories", "episodes", "summary", "history"]


def shares_of(section_budgets: dict[str, float], room: int) -> dict[str, int]:
    """Each part's share of the room (the request's fractions over the configured ones)."""
    fractions = {**settings.CONTEXT_SECTION_BUDGETS, **section_budgets}
    shares = {name: int(room * float(fractions.get(name, 0.0))) for name in PRIORITY if name != "history"}
    shares["history"] = max(0, room - sum(shares.values()))
    return shares


@dataclass
class Candidates:
    evidence: EvidenceUnits
    tasks: Lines
    preferences: Lines
    memories: Lines
    episodes: Lines


@dataclass
class Placement:
    parts: dict[str, Part]
    plan: WindowPlan
    stream: Stream
    summary: Section | None = None
    summarised: list[WindowMessage] = field(default_factory=list)  # messages the summary stands for


def _parts(c: Candidates, shares: dict[str, int], plan: WindowPlan, summary_cost: int) -> tuple[dict[str, Part], Stream]:
    stream = Stream(len(plan), plan.cost)
    memory_frame = frame(MEMORY_HEADER)
    parts = [
        Part("evidence", shares["evidence"], costs=c.evidence.costs, frame=frame(EVIDENCE_HEADER)),
        Part("task_state", shares["task_state"], costs=c.tasks.costs, frame=frame(TASK_HEADER)),
        Part("preferences", shares["preferences"], costs=c.preferences.costs, frame=memory_frame, frame_group="memories"),
        Part("recent", shares["recent"], stream=stream),
        Part("memories", shares["memories"], costs=c.memories.costs, frame=memory_frame, frame_group="memories"),
        Part("episodes", shares["episodes"], costs=c.episodes.costs, frame=frame(EPISODE_HEADER)),
        # Made to fit its share, so it never takes more: extra room is better spent on verbatim history.
        Part("summary", shares["summary"], costs=[summary_cost] if summary_cost else [], extendable=False),
        Part("history", shares["history"], stream=stream),
    ]
    return {p.name: p for p in parts}, stream


def place(conversation: ConversationContext, c: Candidates, shares: dict[str, int], room: int) -> Placement:
    """Allocate without a summary; when older messages are then dropped, reserve the summary's share,
    summarise what falls out, and allocate again over the messages the summary does not cover."""
    plan = conversation.window
    parts, stream = _parts(c, shares, plan, 0)
    allocate(list(parts.values()), room)
    unsummarised = Placement(parts, plan, stream)
    if stream.cursor == len(plan) or shares["summary"] <= 0:
        return unsummarised
    trial, trial_stream = _parts(c, shares, plan, shares["summary"])
    allocate(list(trial.values()), room)
    # The summary rolls a few messages ahead so later turns reuse it, but never into the messages
    # recent's own share holds: recent messages outrank the summary.
    rolled = conversation.summary(placed=trial_stream.cursor, kept=trial["recent"].reserved,
                                  budget=shares["summary"] - frame("Summary of the earlier conversation (messages 1-000000):"))
    if rolled is None:
        return unsummarised
    row = rolled.row
    summary = Section("summary", text=f"Summary of the earlier conversation (messages 1-{row.covers_until_seq}):\n{row.text}",
                      included=[{"summary_id": row.id, "covers_until_seq": row.covers_until_seq, "reused": rolled.reused}])
    parts, stream = _parts(c, shares, rolled.later, count_message_tokens({"role": "system", "content": summary.text}))
    allocate(list(parts.values()), room)
    if not parts["summary"].taken:  # it was made to fit its share, so this should not happen
        return unsummarised
    return Placement(parts, rolled.later, stream, summary=summary, summarised=rolled.summarised)


def shrink(p: Placement) -> bool:
    """Drop the lowest-priority unit still placed (the estimates priced lines one by one; the joined
    text can count a token or two more). Returns False when nothing is left to drop."""
    for name in reversed(PRIORITY):
        part = p.parts[name]
        if name == "summary" and p.summary is not None:
            p.summary = None  # what it stood for stays reported as dropped by the recent section
            return True
        if part.stream is not None:
            if part.taken:
                part.taken.pop()
                p.stream.cursor -= 1  # the oldest unit of the window: contiguity holds
                return True
        elif part.taken:
            part.taken.pop()
            return True
    return False


def window_ids_beside_memory(c: Candidates, shares: dict[str, int], room: int, newest: list[WindowUnit], *,
                             recent_only: bool) -> set[int]:
    """Messages that will (about) be in the window, so recall does not repeat them as episodes: the
    newest units (priced up to the room) that fit the window's room once evidence, task state and the
    memory sections' shares are taken."""
    reserved = sum(c.evidence.costs) + sum(c.tasks.costs)
    if not recent_only:
        reserved += shares["preferences"] + shares["memories"] + shares["episodes"]
    reserved += shares["summary"]
    window = Part("recent", max(shares["recent"], room - reserved), stream=Stream(len(newest), lambda i: newest[i].tokens))
    allocate([window], window.share)
    return {m.id for i in window.taken for m in newest[i].messages}
