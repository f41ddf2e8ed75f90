"""Recall reads a per-user snapshot (memory/recall/snapshot.py) that is valid while the user's memory
generation is unchanged: what changes who may see a memory invalidates it, what is checked now is
read on every call, and the served rows are checked against MySQL once more."""
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from conversations.models import ConversationAccess
from memory.models import Memory, MemoryTerms
from memory.recall import RecallQuery, recall, snapshot_build, snapshot_cache
from memory.services.memories import MemoryInput, SourceRef, memory_write
from tests.conftest import make_client
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db(transaction=True)


def _ids(org, query, user="u1"):
    return [item.memory.id for item in recall(RecallQuery(org=org, user_id=user, query=query, k=5)).items]


def test_a_second_recall_reuses_the_snapshot(org):
    written = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The zqpump valve is in barn 3.")).memory
    assert _ids(org, "zqpump valve") == [written.id]
    with CaptureQueriesContext(connection) as first_call:
        _ids(org, "where is the zqpump valve")
    built = [q["sql"] for q in first_call.captured_queries if "memoryterms" in q["sql"].lower()]
    assert built == []  # the snapshot of the first recall served the second: no rebuild
    memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="A spare zqpump seal is in the van."))
    with CaptureQueriesContext(connection) as after_write:
        found = _ids(org, "zqpump")
    assert any("memoryterms" in q["sql"].lower() for q in after_write.captured_queries)  # rebuilt
    assert len(found) == 2


def test_a_source_added_to_a_duplicate_applies_its_readability(org):
    """A restatement in another conversation adds a source without a new version; the snapshot must
    not keep the old sources, or revoking that conversation would not hide the memory."""
    client = make_client(org, "u1")
    first, second = create_conversation(client)["id"], create_conversation(client)["id"]
    content = "The zqgate code is 4471."
    written = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content=content,
                                       sources=[SourceRef(conversation_id=first, external_ref="turn-1")])).memory
    assert _ids(org, "zqgate code") == [written.id]  # snapshot built, one source
    again = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content=content,
                                     sources=[SourceRef(conversation_id=second, external_ref="turn-9")]))
    assert again.action == "duplicate" and again.memory.id == written.id
    ConversationAccess.objects.create(conversation_id=second, user_id="u1", state=ConversationAccess.REVOKED)
    assert _ids(org, "zqgate code") == []


def test_a_revocation_applies_without_a_memory_write(org):
    conversation = create_conversation(make_client(org, "u1"))["id"]
    written = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The zqshed key hangs by the door.",
                                       sources=[SourceRef(conversation_id=conversation, external_ref="turn-1")])).memory
    assert _ids(org, "zqshed key") == [written.id]
    ConversationAccess.objects.create(conversation_id=conversation, user_id="u1", state=ConversationAccess.REVOKED)
    assert _ids(org, "zqshed key") == []  # same snapshot, readability read now


def test_a_row_changed_behind_the_services_is_not_served(org):
    written = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The zqtank holds 40 litres.")).memory
    assert _ids(org, "zqtank") == [written.id]
    # No generation bump: the snapshot still holds it, the final read by primary key does not serve it.
    Memory.objects.filter(id=written.id).update(status="invalidated")
    assert _ids(org, "zqtank") == []


def test_snapshots_hold_one_user_each(org):
    mine = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="My zqboat is blue.")).memory
    memory_write(MemoryInput(org=org, user_id="u2", kind="fact", content="My zqboat is red."))
    assert _ids(org, "zqboat") == [mine.id]
    held = snapshot_cache.user_snapshot(org.id, "u1")
    assert set(held.ids.tolist()) == {mine.id}


def test_a_write_rebuilds_a_kept_snapshot_off_the_request_path(org, settings):
    settings.RECALL_CORPUS = {**settings.RECALL_CORPUS, "refresh": True}
    first = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The zqmill runs on Mondays.")).memory
    assert _ids(org, "zqmill") == [first.id]  # kept
    second = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The zqmill oil is in the shed.")).memory
    key = (org.id, "u1")
    running = snapshot_cache._inflight.get(key)
    if running is not None:
        running.result(timeout=10)
    rebuilt = snapshot_cache._cache().get(key)
    assert rebuilt is not None and second.id in rebuilt  # rebuilt by the write, before any recall asked
    with CaptureQueriesContext(connection) as ctx:
        assert set(_ids(org, "zqmill")) == {first.id, second.id}
    assert not any("memoryterms" in q["sql"].lower() for q in ctx.captured_queries)


def test_warm_builds_the_most_recently_active_users(org):
    memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The zqfence is green."))
    memory_write(MemoryInput(org=org, user_id="u2", kind="fact", content="The zqgate is red."))
    snapshot_cache.clear()
    assert snapshot_cache.warm(limit=1) == 1
    assert list(snapshot_cache._cache().keys()) == [(org.id, "u2")]  # the most recent writer


def test_prefetched_sources_and_links_are_the_ones_read_on_demand(org):
    conversation = create_conversation(make_client(org, "u1"))["id"]
    for i, content in enumerate(["The zqbin is by the north gate.", "Our dog Rex sleeps in the barn.",
                                 "我们农场在黑龙江齐齐哈尔。"]):
        memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content=content,
                                 sources=[SourceRef(conversation_id=conversation, external_ref=f"turn-{i}")]))
    memory_write(MemoryInput(org=org, user_id="u2", kind="fact", content="Not u1's zqbin."))
    lazy = snapshot_build.build(org.id, "u1", 1, rows=False)
    eager = snapshot_build.build(org.id, "u1", 1)
    eager.prefetch(org.id, "u1")
    ids = lazy.ids.tolist()
    assert len(ids) == 3 and eager.sources_links(ids) == lazy.sources_links(ids)
    assert all(len(found) == 1 for found in eager.sources_links(ids)[0].values())


def test_a_snapshot_built_on_the_request_path_reads_rows_as_they_are_asked_for(org):
    written = [memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content=content)).memory for content in
               ("The zqsilo is full.", "The zqbarn roof leaks.", "我们的zq拖拉机是红色的。")]
    other = memory_write(MemoryInput(org=org, user_id="u2", kind="fact", content="u2's zqsilo.")).memory
    lazy = snapshot_build.build(org.id, "u1", 1, rows=False)
    eager = snapshot_build.build(org.id, "u1", 1)
    assert lazy.raw == {} and len(eager.raw) == 3
    first, second, third = (m.id for m in written)
    with CaptureQueriesContext(connection) as ctx:
        found = lazy.candidates([first, other.id])
    assert list(found) == [first] and len(ctx.captured_queries) == 1  # another user's id is not held
    assert found[first].row == eager.candidate(first).row and found[first].cjk == eager.candidate(first).cjk
    Memory.objects.filter(id=second).update(status="invalidated")  # after the build, no generation bump
    with CaptureQueriesContext(connection) as ctx:
        again = lazy.candidates([first, second, third])
    assert sorted(again) == [first, third] and len(ctx.captured_queries) == 1  # only the rows not read yet
    assert again[third].cjk and again[third].row == eager.candidate(third).row


def test_a_recall_of_a_user_not_kept_builds_without_rows(org):
    written = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The zqpond is stocked.")).memory
    snapshot_cache.clear()
    with CaptureQueriesContext(connection) as ctx:
        assert _ids(org, "zqpond") == [written.id]
    status = f"{connection.ops.quote_name('status')} = "
    # The user's range: ordered row by row, or (SQLite) concatenated into one row.
    user_range = [q["sql"] for q in ctx.captured_queries if ("ORDER BY" in q["sql"] or "group_concat" in q["sql"])
                  and status in q["sql"] and "memoryterms" not in q["sql"].lower()]
    assert len(user_range) == 1 and "importance" not in user_range[0]  # ids and versions only
    held = snapshot_cache._cache().get((org.id, "u1"))
    assert held is not None and list(held.raw) == [written.id]  # its row, read as a candidate


def _same_snapshot(org_id: int, one, other) -> None:
    assert one.ids.tolist() == other.ids.tolist()  # the same order: BM25 ties rank alike
    assert one.flat.tolist() == other.flat.tolist() and one.starts.tolist() == other.starts.tolist()
    for query in (one.flat[:3], one.flat[-2:]):
        assert one.index.scores(query).tolist() == other.index.scores(query).tolist()
    eager = snapshot_build.build(org_id, "u1", 1)
    for memory_id in one.ids.tolist():
        for snapshot in (one, other):
            snapshot.raw.setdefault(memory_id, eager.raw[memory_id])
        mine, theirs = one.candidate(memory_id), other.candidate(memory_id)
        assert (mine.row, mine.cjk, mine.small_talk, mine.speaker) == (theirs.row, theirs.cjk, theirs.small_talk,
                                                                       theirs.speaker)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the concatenated build is SQLite's")
def test_the_concatenated_build_is_the_row_by_row_build(org):
    """A cold build on SQLite reads its two lists as one row each (snapshot_build._build_concatenated); what it
    builds must be what the row-by-row statements build: same order (ties of created_at by id), hashes,
    index and features, and only the user's active memories."""
    contents = ["Caroline: I moved to Hangzhou last spring.", "我们农场的zq拖拉机是红色的。", "ok thanks!",
                "The zqsilo holds 40 tonnes of maize.", "Melanie: 我周末去西湖跑步。", "The zqbarn roof leaks."]
    written = [memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content=c)).memory for c in contents]
    memory_write(MemoryInput(org=org, user_id="u2", kind="fact", content="u2's zqsilo is empty."))
    tied = timezone.now() - timedelta(days=3)
    Memory.objects.filter(id__in=[written[1].id, written[3].id, written[4].id]).update(created_at=tied)
    Memory.objects.filter(id=written[5].id).update(status="invalidated")  # its terms row stays
    concatenated = snapshot_build._build_concatenated(org.id, "u1", 1)
    assert concatenated is not None
    row_by_row = snapshot_build.build(org.id, "u1", 1)
    assert written[5].id not in concatenated.ids.tolist() and len(concatenated.ids) == 5
    _same_snapshot(org.id, concatenated, row_by_row)
    assert concatenated.candidate(written[0].id).speaker == "Caroline"
    assert concatenated.candidate(written[1].id).cjk and not concatenated.candidate(written[3].id).cjk


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the concatenated build is SQLite's")
def test_a_memory_without_current_terms_falls_back_to_its_text(org):
    written = [memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content=c)).memory
               for c in ("The zqpump is in barn 2.", "我们的zq水泵在二号仓库。")]
    MemoryTerms.objects.filter(memory_id=written[1].id).update(version=99)  # as if the projection lagged
    assert snapshot_build._build_concatenated(org.id, "u1", 1) is None
    cold = snapshot_build.build(org.id, "u1", 1, rows=False)  # read its text instead
    _same_snapshot(org.id, cold, snapshot_build.build(org.id, "u1", 1))
    assert len(cold.ids) == 2
    snapshot_cache.clear()
    assert written[0].id in _ids(org, "zqpump")  # a recall of the cold user builds it the same way


def test_an_empty_user_builds_an_empty_snapshot(org):
    empty = snapshot_build.build(org.id, "nobody", 1, rows=False)
    assert len(empty.ids) == 0 and empty.index is None and empty.keyword_scores("anything") == {}
