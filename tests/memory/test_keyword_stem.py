"""English keyword terms are Snowball stems (issue 14): inflections meet, unrelated words stay apart."""
import pytest

from memory.recall.keyword import terms
from memory.recall.snapshot_cache import keyword_scores
from memory.services.memories import MemoryInput, memory_write


@pytest.mark.parametrize("a, b", [("dogs", "dog"), ("caring", "cares"), ("painting", "paints"), ("notes", "note"),
                                  ("studies", "study"), ("classes", "class")])
def test_inflections_share_a_term(a, b):
    assert terms(a) == terms(b)


@pytest.mark.parametrize("a, b", [("notes", "not"), ("caring", "car"), ("bed", "b"), ("needs", "ne")])
def test_a_suffix_cut_does_not_make_another_word(a, b):
    assert terms(a) != terms(b)


def test_codes_and_chinese_are_not_stemmed():
    assert "a-1001" in terms("A-1001") and "1001" in terms("A-1001")
    assert "保养" in terms("上回保养")


@pytest.mark.django_db(transaction=True)
def test_keyword_search_finds_an_inflected_form(org):
    dog = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="Our two dogs sleep in the barn."))
    car = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The car is parked by the gate."))
    found = keyword_scores(org_id=org.id, user_id="u1", query="where does the dog sleep")
    assert dog.memory.id in found and car.memory.id not in found
    assert car.memory.id not in keyword_scores(org_id=org.id, user_id="u1", query="caring for the horses")
