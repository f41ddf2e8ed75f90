"""Keyword terms are a projection: stored beside the vectors, read by the index build when they match
the memory's version and the analyser, ignored otherwise, and erased with the content on forget."""
import random

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from memory import keyword
from memory.keyword import _LuceneBM25, analyser, keyword_scores, memory_terms
from memory.models import MemoryTerms
from memory.projections.terms import terms_sync
from memory.services.forget import forget_request_create
from memory.services.memories import MemoryInput, memory_write


def test_postings_scores_equal_the_librarys_own():
    rng = random.Random(5)
    vocabulary = [f"w{i}" for i in range(40)]
    corpus = [[rng.choice(vocabulary) for _ in range(rng.randint(1, 12))] for _ in range(300)]
    ours = _LuceneBM25(corpus, k1=0.9, b=0.3)
    library = BM25Okapi(corpus, k1=0.9, b=0.3)
    library.idf = ours.idf  # same (Lucene) idf: the scoring loop is what is compared
    for _ in range(20):
        query = [rng.choice(vocabulary + ["unseen"]) for _ in range(rng.randint(1, 25))]
        assert np.array_equal(ours.get_scores(query), library.get_scores(query))


@pytest.mark.django_db(transaction=True)
def test_projection_stores_the_terms_of_the_current_version(org):
    written = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="我家的拖拉机停在三号仓库。"))
    memory = written.memory
    memory.refresh_from_db()
    terms_sync([memory])
    row = MemoryTerms.objects.get(memory=memory)
    assert row.version == memory.version and row.tokenizer == analyser()
    assert row.terms.split("\x1f") == memory_terms(memory.content, memory.slot_key)


@pytest.mark.django_db(transaction=True)
def test_index_build_reads_stored_terms_only_when_they_match(org):
    memory = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The pump is in barn 3.")).memory
    memory.refresh_from_db()
    # Stored terms that differ from the text show which source the build used.
    MemoryTerms.objects.update_or_create(memory=memory, defaults={
        "version": memory.version, "tokenizer": analyser(), "terms": "zqmarker\x1fbarn"})
    keyword.clear()
    assert set(keyword_scores(org_id=org.id, user_id="u1", query="zqmarker")) == {memory.id}
    MemoryTerms.objects.filter(memory=memory).update(tokenizer="v0:other")
    keyword.clear()
    assert keyword_scores(org_id=org.id, user_id="u1", query="zqmarker") == {}
    assert set(keyword_scores(org_id=org.id, user_id="u1", query="pump")) == {memory.id}
    MemoryTerms.objects.filter(memory=memory).update(tokenizer=analyser(), version=memory.version + 7)
    keyword.clear()
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
