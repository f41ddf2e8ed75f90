"""Where the learned judge reads in the write path and at read time (D33): the user's words, not the
rewritten dates; a restatement the rules read that the judge reads as a change; the rules' replaces it
reads as two memories; and its possible conflicts as a change recall can act on."""
from datetime import datetime, timezone

import pytest

from memory.extraction import ExtractionInput
from memory.extraction.rules import RuleExtractor
from memory.models import Memory, MemoryConflict
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db
MARCH, APRIL = "2026-03-02T09:00:00+08:00", "2026-04-12T09:00:00+08:00"


@pytest.fixture(autouse=True)
def learned_replace_on(settings):
    settings.MEMORY_LEARNED_REPLACE = {**settings.MEMORY_LEARNED_REPLACE, "enabled": True}


def say(api, conv, content, at):
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages",
                        {"role": "user", "content": content, "occurred_at": at}, format="json")
    assert response.status_code == 201, response.content


def standing() -> list[Memory]:
    return list(Memory.objects.filter(scope="user").exclude(kind="episode").order_by("id"))


def tell(api, older, newer) -> tuple[Memory, list[Memory]]:
    conv = create_conversation(api)
    say(api, conv, older, MARCH)
    [old] = standing()
    say(api, conv, newer, APRIL)
    old.refresh_from_db()
    return old, [m for m in standing() if m.id != old.id]


def test_a_statement_whose_times_were_rewritten_keeps_the_users_words_for_the_judge():
    at = datetime(2026, 3, 18, 9, tzinfo=timezone.utc)
    result = RuleExtractor().extract(ExtractionInput(role="user", content="最近老丢件，受不了了，下周起发货全换极兔。",
                                                     occurred_at=at, existing=[]))
    [candidate] = [c for c in result.candidates if "极兔" in c.content]
    assert "下周" not in candidate.content  # the stored memory carries the date
    assert candidate.said is not None and "下周起" in candidate.said


def test_a_plain_statement_has_no_second_text():
    at = datetime(2026, 3, 18, 9, tzinfo=timezone.utc)
    [candidate] = RuleExtractor().extract(ExtractionInput(role="user", content="我们店发货用的中通。", occurred_at=at,
                                                          existing=[])).candidates
    assert candidate.said is None


def test_a_filler_lead_goes_whole():
    at = datetime(2026, 3, 18, 9, tzinfo=timezone.utc)
    for text in ("跟你说下哈，3栋的管家换成阿芳了。", "跟你说一声，老师傅回老家养老了，现在裱画交给阿杰。"):
        [first, *_] = RuleExtractor().extract(ExtractionInput(role="user", content=text, occurred_at=at,
                                                              existing=[])).candidates
        assert not first.content.startswith(("下", "一声")), first.content


def test_a_new_value_the_rules_read_as_the_old_said_again_is_not_lost(api):
    """The rules read one head and fold the statement into the older; the judge reads a change."""
    old, new = tell(api, "我们年卡卖2999。", "年卡涨价了，现在3299，房租涨了没办法。")
    assert [m for m in new if "3299" in m.content and m.status == "active"]
    assert old.status == "superseded" or MemoryConflict.objects.filter(older=old).exists()


def test_the_judge_keeps_a_look_alike_the_rules_would_replace(api, settings):
    older, newer = "Lincoln Elementary's on-site tech is Sam.", "Roosevelt Middle's tech is Jo, she's there tues and thurs."
    old, _ = tell(api, older, newer)
    assert old.status == "active"
    conflict = MemoryConflict.objects.get(older=old)
    assert "judge" not in conflict.signals and conflict.signals["veto"]  # the rules' flag the judge read again

    Memory.objects.all().delete()
    settings.MEMORY_LEARNED_REPLACE = {**settings.MEMORY_LEARNED_REPLACE, "veto": False}
    old, _ = tell(api, older, newer)
    assert old.status == "superseded"  # what the rules alone do: the veto is what keeps it


def test_a_conflict_the_judge_vetoed_is_queued_but_does_not_reorder_recall(api):
    """A possible conflict ranks the newer first, as a likely change; one the judge read as two memories
    waits for review and leaves the ranking alone (nor does recall read it as a change)."""
    old, _ = tell(api, "Lincoln Elementary's on-site tech is Sam.",
                  "Roosevelt Middle's tech is Jo, she's there tues and thurs.")
    conflict = MemoryConflict.objects.get(older=old)
    assert conflict.status == "open" and conflict.signals.get("veto") is True

    def order():
        response = api.post("/api/v1/recall", {"query": "who is Lincoln Elementary's on-site tech?"}, format="json")
        items = response.json()["items"]
        assert {i["as"] for i in items} == {"current"}
        return [i["id"] for i in items]

    ids = order()
    assert ids[0] == old.id and conflict.newer_id in ids  # the ranking's order: Sam answers the question
    conflict.signals = {k: v for k, v in conflict.signals.items() if k != "veto"}
    conflict.save()
    ids = order()
    assert ids.index(conflict.newer_id) < ids.index(old.id)  # a plain possible conflict: the newer first


def test_a_slot_key_the_caller_gave_is_not_read_again():
    """The caller's slot key says both are one subject's values; the same key from the extractor is only
    the service's reading, and the judge may keep the pair apart."""
    from memory.services.memories import MemoryInput, memory_write
    from tenancy.services import org_get_or_create

    org = org_get_or_create(slug="veto-org")
    older, newer = "Lincoln Elementary's on-site tech is Sam.", "Roosevelt Middle's tech is Jo, she's there tues and thurs."
    for by, user, expected in (("api", "u-api", "superseded"), ("extractor", "u-ex", "active")):
        old = memory_write(MemoryInput(org=org, user_id=user, kind="fact", content=older, slot_key="tech",
                                       created_by=by)).memory
        memory_write(MemoryInput(org=org, user_id=user, kind="fact", content=newer, slot_key="tech", created_by=by))
        old.refresh_from_db()
        assert old.status == expected, by


def test_a_judged_possible_change_is_history_at_read_time(api, settings):
    """Under the replace floor the judge flags the pair; recall reads its flag as the change word the
    newer does not have ("went under contract" is in no cue list), and presents the older as history."""
    from memory.subjects.current import may_say_change

    older, newer = "412 Elm is listed at $649k.", "412 Elm went under contract at $640k."
    assert not may_say_change(newer)  # without the judge's flag, recall would leave both current
    settings.MEMORY_LEARNED_REPLACE = {**settings.MEMORY_LEARNED_REPLACE, "min": 1.01, "conflict": 0.3}
    old, _ = tell(api, older, newer)
    assert old.status == "active"
    conflict = MemoryConflict.objects.get(older=old)
    assert "judge" in conflict.signals
    body = api.post("/api/v1/recall", {"query": "What's the price on 412 Elm?", "k": 5}, format="json").json()
    as_of = {item["id"]: item["as"] for item in body["items"]}
    assert as_of.get(old.id) == "history"
    assert as_of.get(conflict.newer_id) == "current"


def test_the_judge_reads_the_rules_history_again(settings):
    """A change word about another subject ("new rocket") does not make the launch site history; a change
    of the supplier does. With judge_min 0 the judge is not asked."""
    from memory.recall.current_state import _judge_disagrees
    from memory.subjects.current import Said

    site = Said("Heads up, the club lost access to the quarry, so launches are at Dunmore airfield from now on", "preference")
    other = Said("Next launch is in two weeks, I'm building a new rocket for it", "fact")
    supplier, changed = Said("我们的配件供应商是华信。", "fact"), Said("配件供应商改成大陆了。", "fact")
    settings.RECALL_HISTORY = {**settings.RECALL_HISTORY, "judge_min": 0.3}
    assert _judge_disagrees(site, other)
    assert not _judge_disagrees(supplier, changed)
    settings.RECALL_HISTORY = {**settings.RECALL_HISTORY, "judge_min": 0.0}
    assert not _judge_disagrees(site, other)


def test_an_event_under_its_floor_flags_the_state_it_may_change(api, settings):
    """A change told as an event that the event reading doubts is flagged, never replaced: both stay
    standing, the pair is queued as the judge's possible change."""
    settings.MEMORY_LEARNED_REPLACE = {**settings.MEMORY_LEARNED_REPLACE, "event_min": 1.01}
    old, new = tell(api, "My everyday watch is a Seiko 6139 from 1972.",
                    "Sold my old everyday watch to a collector last week and picked up an Omega Seamaster 300.")
    assert old.status == "active"
    [event] = [m for m in new if m.kind == "event"]
    conflict = MemoryConflict.objects.get(older=old)
    assert conflict.newer_id == event.id and "judge" in conflict.signals


def test_a_plan_still_ahead_is_replaced_by_the_statement_that_changes_it(api, settings):
    """A plan told as an event (a date ahead) and a later statement that moves it: the statement replaces
    the plan; the subject tier compares statements only, so only the judge reads this pair."""
    old, new = tell(api, "我们剧团的年度大戏定在2026年10月15日首演。", "场地那边出了问题，年度大戏首演改到2026年10月22日了。")
    assert old.kind == "event"
    assert old.status == "superseded", [m.content for m in new]

    Memory.objects.all().delete()
    settings.MEMORY_LEARNED_REPLACE = {**settings.MEMORY_LEARNED_REPLACE, "plans": False}
    old, _ = tell(api, "我们剧团的年度大戏定在2026年10月15日首演。", "场地那边出了问题，年度大戏首演改到2026年10月22日了。")
    assert old.status == "active"  # without the plan step nothing reads the pair
