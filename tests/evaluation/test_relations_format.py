"""Entity relations in scenario files (FORMAT.md): validated, then registered with the case's entities."""
import pytest

from evaluation.schema import ScenarioFormatError, validate_case


def case(relations):
    return {"id": "c1", "org": "o", "user": "u1", "steps": [],
            "entities": [{"type": "asset", "id": "A-1", "name": "1号冷柜"},
                         {"type": "workorder", "id": "WO-1", "name": "工单1", "relations": relations}]}


def test_relations_are_part_of_the_format():
    validate_case(case([{"type": "about", "to": "A-1"}]))
    validate_case(case([{"type": "about", "to": "A-1", "valid_from": "2026-01-01T00:00:00Z", "source": "erp"}]))


@pytest.mark.parametrize("relations, words", [
    ([{"type": "about"}], "missing field(s) ['to']"),
    ([{"type": "about", "to": "A-1", "weight": 2}], "unknown field(s) ['weight']"),
    ({"type": "about", "to": "A-1"}, "relations must be a list"),
])
def test_a_relation_the_runner_cannot_read_refuses_the_file(relations, words):
    with pytest.raises(ScenarioFormatError) as exc:
        validate_case(case(relations))
    assert words in str(exc.value) and "entities[1].relations" in str(exc.value)
