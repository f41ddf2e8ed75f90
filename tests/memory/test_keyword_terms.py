"""Keyword terms are a projection: stored (as hashes, with the text verdicts) beside the vectors, read
by the snapshot build when they match the memory's version and the analyser, ignored otherwise, and
erased with the content on forget."""
import math
import random

import numpy as np
import pytest
from django.conf import settings
from django.db import connection
from rank_bm25 import BM25Okapi

from memory.models import MemoryTerms
from memory.projections.terms import terms_sync
from memory.recall import snapshot_cache, snapshot_sql
from memory.recall.keyword import TermIndex, analyser, memory_terms, stored_hashes, term_hashes
from memory.recall.snapshot_cache import keyword_scores
from memory.services.forget import forget_request_create
from memory.services.memories import MemoryInput, memory_write


class _LuceneBM25(BM25Okapi):
    """The library with Lucene's idf, which TermIndex uses."""

    def _calc_idf(self, nd):
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


def test_postings_scores_equal_the_librarys_own():
    rng = random.Random(5)
    vocabulary = [f"w{i}" for i in range(40)]
    corpus_words = [[rng.choice(vocabulary) for _ in range(rng.randint(1, 12))] for _ in range(300)]
    ours = TermIndex([term_hashes(doc) for doc in corpus_words], k1=0.9, b=0.3)
    library = _LuceneBM25(corpus_words, k1=0.9, b=0.3)
    for _ in range(20):
        query = [rng.choice(vocabulary + ["unseen"]) for _ in range(rng.randint(1, 25))]
        assert np.array_equal(ours.scores(term_hashes(query)), library.get_scores(query))


@pytest.mark.django_db(transaction=True)
def test_projection_stores_the_terms_of_the_current_version(org):
    written = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="我家的拖拉机停在三号仓库。"))
    memory = written.memory
    memory.refresh_from_db()
    terms_sync([memory])
    row = MemoryTerms.objects.get(memory=memory)
    assert row.version == memory.version and row.tokenizer == analyser()
    assert np.array_equal(stored_hashes(row.hashes), term_hashes(memory_terms(memory.content, memory.slot_key)))
    assert row.cjk and not row.small_talk and row.speaker == ""


@pytest.mark.django_db(transaction=True)
def test_index_build_reads_stored_terms_only_when_they_match(org):
    memory = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The pump is in barn 3.")).memory
    memory.refresh_from_db()
    # Stored terms that differ from the text show which source the build used.
    MemoryTerms.objects.update_or_create(memory=memory, defaults={
        "version": memory.version, "tokenizer": analyser(), "hashes": term_hashes(["zqmarker", "barn"]).tobytes()})
    snapshot_cache.clear()
    assert set(keyword_scores(org_id=org.id, user_id="u1", query="zqmarker")) == {memory.id}
    MemoryTerms.objects.filter(memory=memory).update(tokenizer="v0:other")
    snapshot_cache.clear()
    assert keyword_scores(org_id=org.id, user_id="u1", query="zqmarker") == {}
    assert set(keyword_scores(org_id=org.id, user_id="u1", query="pump")) == {memory.id}
    MemoryTerms.objects.filter(memory=memory).update(tokenizer=analyser(), version=memory.version + 7)
    snapshot_cache.clear()
    assert keyword_scores(org_id=org.id, user_id="u1", query="zqmarker") == {}


@pytest.mark.django_db(transaction=True)
def test_forget_erases_the_stored_terms(org):
    memory = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The zqpump is in barn 3.")).memory
    memory.refresh_from_db()
    terms_sync([memory])
    assert MemoryTerms.objects.filter(memory=memory).exists()
    forget_request_create(org=org, subject_user="u1", requested_by="test", target="memory", memory_ids=[memory.id],
                          execute_inline=True)
    assert not MemoryTerms.objects.filter(memory=memory).exists()


@pytest.mark.django_db(transaction=True)
def test_a_snapshot_keeps_each_memorys_terms_whether_stored_or_segmented_on_the_spot(org):
    texts = ["我家的拖拉机停在三号仓库。", "The pump is in barn 3.", "周五下午检修二号泵。"]
    memories = [memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content=t)).memory for t in texts]
    for memory in memories:
        memory.refresh_from_db()
    terms_sync(memories[:2])  # the third's terms are not projected yet: the build segments its text
    MemoryTerms.objects.filter(memory=memories[2]).delete()
    snapshot_cache.clear()
    snapshot = snapshot_cache.user_snapshot(org.id, "u1")
    expected = {m.id: term_hashes(memory_terms(m.content, m.slot_key)) for m in memories}
    for memory in memories:
        assert np.array_equal(snapshot.terms_of([memory.id]), expected[memory.id])
    both = [memories[2].id, memories[0].id, 10**9]  # an id outside the snapshot adds nothing
    assert np.array_equal(snapshot.terms_of(both), np.concatenate([expected[memories[2].id], expected[memories[0].id]]))
    # The snapshot's index, built from the joined blobs, scores as one built document by document.
    rebuilt = TermIndex([expected[i] for i in snapshot.ids.tolist()], k1=settings.KEYWORD_BM25_K1,
                        b=settings.KEYWORD_BM25_B)
    query = term_hashes(["拖拉机", "pump", "二号"])
    assert np.array_equal(snapshot.index.scores(query), rebuilt.scores(query))
    assert rebuilt.scores(query).max() > 0


@pytest.mark.django_db(transaction=True)
def test_a_snapshot_reads_its_two_ranges_from_covering_indexes_on_sqlite(org):
    """The build's statements stay one index range each: the terms index is raw SQL (migration 0011),
    which a later SQLite table rebuild would drop without a word."""
    if connection.vendor != "sqlite":
        pytest.skip("the covering terms index is SQLite's")
    with connection.cursor() as cursor:
        for statement, params in ((snapshot_sql.rows_statement(), [org.id, "u1", "active"]),
                                  (snapshot_sql.terms_statement(), [org.id, "u1"])):
            cursor.execute("EXPLAIN QUERY PLAN " + statement, params)
            plan = " ".join(str(row[-1]) for row in cursor.fetchall())
            assert "COVERING INDEX" in plan and "TEMP B-TREE" not in plan, plan
