"""The budget allocator alone: random budgets, shares and section sizes (no database)."""
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memory.context.budget import Part, Stream, allocate

NAMES = ["evidence", "task_state", "preferences", "recent", "memories", "episodes", "history"]


def build(spec, window):
    stream = Stream(len(window), window.__getitem__)
    parts = []
    for name, (share, costs, frame) in zip(NAMES, spec):
        if name in ("recent", "history"):
            parts.append(Part(name, share=share, stream=stream))
        else:
            group = "memories" if name in ("preferences", "memories") else ""
            parts.append(Part(name, share=share, costs=costs, frame=frame, frame_group=group))
    return parts, stream


def dropped(part, stream):
    if part.stream is not None:
        return [stream.cost(stream.cursor)] if stream.cursor < stream.length else []
    return [c for i, c in enumerate(part.costs) if i not in part.taken]


section = st.tuples(st.integers(0, 400), st.lists(st.integers(1, 300), max_size=8), st.integers(0, 12))


@hsettings(max_examples=400, deadline=None)
@given(total=st.integers(0, 3000), spec=st.lists(section, min_size=len(NAMES), max_size=len(NAMES)),
       window=st.lists(st.integers(1, 400), max_size=20))
def test_total_never_exceeds_budget_and_priority_is_respected(total, spec, window):
    # Shares are fractions of one budget: they never add up to more than it.
    scale = min(1.0, total / max(1, sum(s[0] for s in spec)))
    spec = [(int(share * scale), costs, frame) for share, costs, frame in spec]
    parts, stream = build(spec, window)

    left = allocate(parts, total)

    used = sum(p.used for p in parts)
    assert used + left == total and left >= 0
    for part in parts:
        if part.stream is None:
            frames = part.frame if part.taken and not part.frame_group else 0
            assert part.used <= sum(part.costs[i] for i in part.taken) + part.frame  # nothing is counted twice
            assert part.used >= sum(part.costs[i] for i in part.taken) + frames
    assert stream.cursor == len(parts[3].taken) + len(parts[6].taken)
    for h, high in enumerate(parts):
        # What parts of lower priority got beyond their own share, plus what is still unused, never
        # holds a dropped unit of a higher-priority part (with its message framing, if that part is empty).
        excess = sum(max(0, low.used - low.share) for low in parts[h + 1:]) + left
        for cost in dropped(high, stream):
            assert cost + (0 if high.taken else high.frame) > excess, (high.name, cost, excess)
        # And no part is cut below its own share (the window's share is its newest units': recent's
        # reservation comes first, and an older unit that fits later is history's, the lowest priority).
        if dropped(high, stream) and high.stream is None:
            assert high.used + min(dropped(high, stream)) + high.frame > min(high.share, total)


def test_a_share_a_section_does_not_need_goes_to_the_others():
    # No evidence and no task state: their shares go to the memories, which would not fit their own.
    parts = [Part("evidence", share=500), Part("task_state", share=100),
             Part("memories", share=50, costs=[40, 40, 40, 40], frame=10)]
    left = allocate(parts, 1000)
    assert parts[2].taken == [0, 1, 2, 3] and parts[2].used == 170 and left == 830


def test_the_window_stays_contiguous_across_its_two_parts():
    window = [100, 100, 500, 10]
    stream = Stream(len(window), window.__getitem__)
    recent, history = Part("recent", share=150, stream=stream), Part("history", share=0, stream=stream)
    memories = Part("memories", share=50, costs=[60])
    allocate([recent, memories, history], 710)
    # Recent messages outrank memories: the rest of the budget goes to the window first.
    assert (recent.taken, memories.taken, history.taken) == ([0, 1, 2, 3], [], [])
    stream = Stream(len(window), window.__getitem__)
    recent, history = Part("recent", share=150, stream=stream), Part("history", share=0, stream=stream)
    allocate([recent, history], 400)
    assert recent.taken == [0, 1] and stream.cursor == 2  # the 10-token unit never jumps the 500 one
