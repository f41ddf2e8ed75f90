"""Turn neighbours in the second look (memory/recall/rerank.py): the turns next to the best candidates'
turns are candidates too, and those next to the top hits gain a bonus."""
import pytest

from memory.models import Memory, MemorySource
from memory.recall.rerank import turn_neighbours
from tests.conversations.api_helpers import create_conversation
from tests.memory.test_recall import recall

SECOND_LOOK = {"seeds": 2, "weight": 0.4, "expand": False}


@pytest.fixture(autouse=True)
def _second_look_on_small_corpora(settings):
    # These users have a handful of memories: the second look's pool gate (memory/recall/ranking.py)
    # would keep it off; the gate has its own tests (tests/memory/test_signal_confidence.py).
    settings.RECALL_CONFIDENCE = {**settings.RECALL_CONFIDENCE, "second_look_needs_pool": False}


def _append(api, conversation_id: int, texts: list[str]) -> None:
    messages = [{"role": "user", "content": text} for text in texts]
    response = api.post(f"/api/v1/conversations/{conversation_id}/messages/batch", {"messages": messages}, format="json")
    assert response.status_code == 201, response.content


def _episode(text: str) -> int:
    return Memory.objects.get(kind="episode", content=text).id


def _turn_memories(conversation_id: int, seqs: set[int]) -> set[int]:
    return set(MemorySource.objects.filter(message__conversation_id=conversation_id, message__seq__in=seqs)
               .values_list("memory_id", flat=True))


TURNS = ["Caroline: I spent the whole weekend repainting the kitchen cabinets a deep green colour.",
         "Melanie: Oh nice, how did the old hinges hold up after all these years?",
         "Caroline: Guess what I finally signed up for at the library!",
         "Caroline: A pottery class at the community centre, every Tuesday evening.",
         "Melanie: My son scored two goals at his football match on Saturday morning."]


def test_neighbours_are_the_next_turns_of_the_same_conversation(api):
    first, other = create_conversation(api, "a"), create_conversation(api, "b")
    _append(api, first["id"], TURNS)
    _append(api, other["id"], ["Melanie: We drove to the coast for a long picnic with the kids.",
                               "Caroline: The lighthouse tour was closed for repairs this month.",
                               "Melanie: The kids collected shells and crabs all afternoon."])
    seed = _episode(TURNS[2])  # turn 3 of the first conversation
    near = turn_neighbours([seed], 1)
    assert set(near) == _turn_memories(first["id"], {2, 4}) and near  # not turn 3 itself, not the other conversation
    seed_message = MemorySource.objects.get(memory_id=seed).message_id
    assert set(near.values()) == {seed_message}
    assert set(turn_neighbours([seed], 2)) == _turn_memories(first["id"], {1, 2, 4, 5})
    assert turn_neighbours([seed], 0) == {} and turn_neighbours([], 1) == {}


def test_the_turn_after_the_top_hit_gains_the_neighbour_bonus(api, settings):
    conversation = create_conversation(api, "a")
    _append(api, conversation["id"], TURNS)
    question = "What did Caroline sign up for at the library?"
    settings.RECALL_SECOND_LOOK = {**SECOND_LOOK, "neighbours": 1, "neighbour_weight": 0.2}
    # A turn is recalled as its episode or, remembered by default (D25), as the memory it states in its
    # own words (the episode then stands behind it): keyed by the words, without the end punctuation.
    on = {item["content"].rstrip(".!?"): item for item in recall(api, question, k=5, explain=True)["items"]}
    settings.RECALL_SECOND_LOOK = {**SECOND_LOOK, "neighbours": 0}
    off = {item["content"].rstrip(".!?"): item for item in recall(api, question, k=5, explain=True)["items"]}
    answer = TURNS[3].rstrip(".!?")
    assert "signed up" in list(off)[0]  # the question matches the turn before the answer
    gained = on[answer]["score_parts"]["second_look"] - off[answer]["score_parts"]["second_look"]
    assert abs(gained - 0.2) < 1e-3
    far = TURNS[0].rstrip(".!?")  # two turns away from the top hit: no bonus
    if far in on and far in off:
        assert abs(on[far]["score_parts"]["second_look"] - off[far]["score_parts"]["second_look"]) < 1e-3


def test_a_forgotten_neighbour_is_never_recalled(api, settings):
    conversation = create_conversation(api, "a")
    _append(api, conversation["id"], TURNS)
    # Everything the turn left (its episode and, remembered by default, the fact it states).
    answer = list(MemorySource.objects.filter(message__content=TURNS[3]).values_list("memory_id", flat=True))
    response = api.post("/api/v1/forget", {"memory_ids": answer}, format="json")
    assert response.status_code in (200, 201, 202), response.content
    settings.RECALL_SECOND_LOOK = {**SECOND_LOOK, "neighbours": 1, "neighbour_weight": 0.5}
    body = recall(api, "What did Caroline sign up for at the library?", k=5)
    assert "pottery" not in " ".join(item["content"] for item in body["items"])


def test_the_speakers_a_question_names():
    from memory.recall.rerank import asked_speakers

    speakers = {1: "Caroline", 2: "Melanie", 3: None, 4: "Jon Snow"}
    assert asked_speakers("What might Caroline's degree be in?", speakers) == {"Caroline"}
    assert asked_speakers("Did Jon Snow and caroline meet?", speakers) == {"Caroline", "Jon Snow"}
    assert asked_speakers("When did Jon move?", speakers) == set()  # every part of a name
    assert asked_speakers("What did Caroline tell Melanie and Jon Snow?", speakers) == set()  # everyone: no one stands out
    assert asked_speakers("我家狗对什么过敏", {1: None}) == set()


def test_what_the_named_speaker_said_gains_the_speaker_bonus(api, settings):
    conversation = create_conversation(api, "a")
    _append(api, conversation["id"], ["Melanie: I really love hiking in the mountains on quiet weekends.",
                                      "Caroline: I love hiking in the mountains too, mostly on long weekends.",
                                      "Melanie: The weather was lovely for the farmers market this morning."])
    question = "What does Caroline love doing at weekends?"
    settings.RECALL_SECOND_LOOK = {**SECOND_LOOK, "speaker_weight": 0.2}
    on = {item["content"]: item["score_parts"]["second_look"] for item in recall(api, question, k=5, explain=True)["items"]}
    settings.RECALL_SECOND_LOOK = dict(SECOND_LOOK)
    off = {item["content"]: item["score_parts"]["second_look"] for item in recall(api, question, k=5, explain=True)["items"]}
    carolines = [c for c in on if c.startswith("Caroline:")]
    melanies = [c for c in on if c.startswith("Melanie:")]
    assert carolines and melanies
    assert all(abs(on[c] - off[c] - 0.2) < 1e-3 for c in carolines)
    assert all(abs(on[c] - off[c]) < 1e-3 for c in melanies)


def test_a_neighbour_never_rises_above_the_hit_it_neighbours(api, settings):
    # The older plan and the assistant's echoes are the top hit's neighbours: evidence about it,
    # never above it, however large the bonus.
    conversation = create_conversation(api, "a")
    response = api.post(f"/api/v1/conversations/{conversation['id']}/messages/batch", {"messages": [
        {"role": "user", "content": "Please send my weekly summary on Friday afternoons."},
        {"role": "assistant", "content": "Sure, weekly summary on Friday afternoons."},
        {"role": "user", "content": "Let's move the weekly summary to Monday mornings from now on."},
        {"role": "assistant", "content": "Done, it will come on Monday mornings."}]}, format="json")
    assert response.status_code == 201, response.content
    settings.RECALL_SECOND_LOOK = {**SECOND_LOOK, "neighbours": 2, "neighbour_weight": 1.0}
    body = recall(api, "When should I get my weekly summary?", k=5, explain=True)
    assert "Monday" in body["items"][0]["content"]
    assert any("Friday" in item["content"] for item in body["items"])  # the neighbours are there, lower
