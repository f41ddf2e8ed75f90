"""RuleExtractor, English: the same rules as in Chinese, one test each."""
from datetime import datetime, timedelta

import pytest

from memory.extraction import ExistingMemory, ExtractionInput, ExtractionResult
from memory.extraction.rules import RuleExtractor

AT = datetime.fromisoformat("2026-03-02T09:00:00+08:00")  # a Monday
EXTRACTOR = RuleExtractor()


def extract(text: str, *, role: str = "user", at: datetime = AT, existing=(), recent=()) -> ExtractionResult:
    result = EXTRACTOR.extract(ExtractionInput(role=role, content=text, occurred_at=at, existing=list(existing),
                                               recent=list(recent)))
    assert result.produced_by == "rules"
    return result


def one(text: str, **kwargs):
    result = extract(text, **kwargs)
    assert not result.do_not_remember
    assert len(result.candidates) == 1, result.candidates
    return result.candidates[0]


def midnight(day: str) -> datetime:
    return datetime.fromisoformat(f"{day}T00:00:00+08:00")


# ---------------------------------------------------------------------------- preferences
@pytest.mark.parametrize(
    ("text", "slot_key"),
    [
        ("I prefer short answers.", "pref:answer.style"),
        ("From now on, sort maintenance suggestions by urgency from high to low.", "pref:maintenance suggestion.sort order"),
        ("Please always answer in English.", "pref:answer.language"),
        ("By default show me the next two weeks of the maintenance plan.", "pref:maintenance plan.time range"),
    ],
)
def test_explicit_preferences(text, slot_key):
    c = one(text)
    assert (c.kind, c.assertion, c.scope) == ("preference", "user_stated", "user")
    assert c.slot_key == slot_key


def test_preference_update_shares_the_slot_and_keeps_its_window_words():
    first = one("By default show me the next two weeks of the maintenance plan.")
    second = one("From now on, show me the next month of the maintenance plan instead.")
    assert first.slot_key == second.slot_key
    assert second.change == "update"
    assert "next month" in second.content  # a rolling window, not a date to resolve


def test_paraphrased_tool_preference_shares_the_slot():
    first = one("I like writing backends in Java.")
    second = one("Java is my main programming language.")
    assert first.kind == second.kind == "preference"
    assert first.slot_key == second.slot_key == "pref:user.programming language"


# ---------------------------------------------------------------------------- facts
@pytest.mark.parametrize(
    ("text", "slot_key"),
    [
        ("We use MySQL 8 for our business system.", "fact:business system.database"),
        ("Our business system runs on MySQL 8.", "fact:business system.database"),
        ("Our farm is in Jiamusi.", "fact:farm.location"),
        ("I live in Hangzhou.", "fact:user.address"),
        ("My name is Tom.", "fact:user.name"),
        ("Our cooperative's purchasing budget this year is 800k.", "fact:cooperative.purchasing budget"),
    ],
)
def test_facts_about_the_user_or_organisation(text, slot_key):
    c = one(text)
    assert (c.kind, c.assertion, c.scope) == ("fact", "user_stated", "user")
    assert c.slot_key == slot_key


def test_explicit_remember_request_is_stripped_and_raises_importance():
    plain = one("Our backup generator is in Warehouse 2.")
    asked = one("Remember that our backup generator is in Warehouse 2.")
    assert asked.content == plain.content == "Our backup generator is in Warehouse 2"
    assert asked.importance > plain.importance


# ---------------------------------------------------------------------------- events
def test_event_last_week_resolves_a_week_back():
    c = one("Our cooperative bought a new grain dryer from Nanjing last week.")
    assert (c.kind, c.assertion) == ("event", "confirmed_event")
    assert c.occurred_at == AT - timedelta(days=7)
    assert "Nanjing" in c.content and "grain dryer" in c.content
    assert "last week" not in c.content


@pytest.mark.parametrize(
    ("text", "occurred_at"),
    [
        ("Harvester No. 1 broke down yesterday with a hydraulic leak.", midnight("2026-03-01")),
        ("We installed a new pump today.", midnight("2026-03-02")),
        ("We sold the old tractor last month.", midnight("2026-02-01")),
        ("We signed the lease on February 20.", midnight("2026-02-20")),
        ("Our dryer failed three days ago.", midnight("2026-02-27")),
    ],
)
def test_dated_events_resolve_the_event_time(text, occurred_at):
    c = one(text)
    assert c.kind == "event"
    assert c.occurred_at == occurred_at


def test_two_breakdowns_are_two_events():
    first = one("Harvester No. 1 leaked hydraulic oil today.")
    second = one("Harvester No. 1 overheated today.", at=AT + timedelta(days=39))
    assert first.slot_key != second.slot_key and first.content != second.content
    assert second.operation == "ADD" and second.supersedes == []


# ---------------------------------------------------------------------------- corrections
@pytest.mark.parametrize(
    "text",
    ["Actually, our farm is in Qiqihar, not Jiamusi.", "No, you got it wrong: our farm is in Qiqihar, not Jiamusi."],
)
def test_correction_states_only_the_corrected_value(text):
    c = one(text)
    assert c.change == "correction"
    assert c.content == "Our farm is in Qiqihar"
    assert c.slot_key == one("Our farm is in Jiamusi.").slot_key


def test_subjectless_correction_is_rebuilt_from_the_memory_it_corrects():
    old = ExistingMemory(short_id=4, kind="fact", content="Our farm is in Jiamusi", slot_key="fact:farm.location")
    c = one("Actually it's Qiqihar, not Jiamusi.", existing=[old])
    assert c.content == "Our farm is in Qiqihar"
    assert (c.operation, c.supersedes, c.change) == ("UPDATE", [4], "correction")


# ---------------------------------------------------------------------------- changes / migrations
def test_migration_shares_the_slot_of_the_old_value():
    old = one("Our business system runs on MySQL 8.")
    c = one("We migrated our business system to PostgreSQL last month.", at=AT.replace(day=15))
    assert (c.kind, c.change) == ("fact", "migration")
    assert c.slot_key == old.slot_key
    assert c.valid_from == midnight("2026-02-01")


@pytest.mark.parametrize(
    "text",
    ["We switched our business system from MySQL to PostgreSQL.", "We no longer use MySQL.",
     "We moved to PostgreSQL instead of MySQL."],
)
def test_change_naming_the_old_value_supersedes_it(text):
    old = ExistingMemory(short_id=7, kind="fact", content="Our business system runs on MySQL 8")
    c = one(text, existing=[old])
    assert c.change in ("migration", "update")
    assert (c.operation, c.supersedes) == ("UPDATE", [7])


# ---------------------------------------------------------------------------- temporary instructions
@pytest.mark.parametrize("text", ["This time only show this week.", "Just for now, use Excel.",
                                  "Only today, skip the east district."])
def test_temporary_instruction_is_task_scope_only(text):
    c = one(text)
    assert (c.kind, c.scope) == ("context", "task")


def test_temporary_instruction_never_replaces_the_long_term_preference():
    pref = ExistingMemory(short_id=1, kind="preference", content="By default show me the next two weeks",
                          slot_key="pref:maintenance plan.time range")
    c = one("This time only show this week.", existing=[pref])
    assert (c.scope, c.operation, c.supersedes) == ("task", "ADD", [])


# ---------------------------------------------------------------------------- do not remember
@pytest.mark.parametrize(
    "text",
    ["Don't remember this, my ID number is 330106199001011234.", "My PIN is 1234, please don't save it.",
     "Forget what I just said.", "This is off the record: we may sell the farm."],
)
def test_do_not_remember(text):
    result = extract(text)
    assert result.do_not_remember is True
    assert result.candidates == []


@pytest.mark.parametrize("text", ["I don't remember where I put the keys.",
                                  "Don't forget this: our warehouse is in the east district."])
def test_statements_about_remembering_are_not_do_not_remember(text):
    assert extract(text).do_not_remember is False


# ---------------------------------------------------------------------------- assistant turns
@pytest.mark.parametrize(
    "text",
    ["I suggest servicing the header of harvester No. 1 next week.", "You should replace the hydraulic hose soon.",
     "I'd recommend checking the chain tension before harvest."],
)
def test_assistant_suggestion_is_a_model_suggestion(text):
    c = one(text, role="assistant")
    assert (c.kind, c.assertion) == ("suggestion", "model_suggestion")


@pytest.mark.parametrize(
    "text",
    ["Noted: a new grain dryer from Nanjing.", "Sure, I'll remember that.", "Got it.",
     "You should have received the report by now.", "Your farm is in Jiamusi."],
)
def test_assistant_acknowledgements_give_nothing(text):
    assert extract(text, role="assistant").candidates == []


# ---------------------------------------------------------------------------- the gate
@pytest.mark.parametrize(
    "text",
    [pytest.param("The weather has been rainy all week.", marks=pytest.mark.xfail(
        strict=True, reason="gate model miss: weather small talk kept as a fact (D25)")),
     "Thanks!", "Haha, nice.", "I'm tired today.",
     "I think it's going to be fine.", "Good morning!"],
)
def test_chit_chat_leaves_nothing_standing(text):
    assert [c for c in extract(text).candidates if c.kind in ("fact", "preference") and c.scope == "user"] == []


@pytest.mark.parametrize("text", ["I usually eat dinner at 7.", "I go hiking every weekend.",
                                  "We have breakfast together every Sunday."])
def test_a_routine_on_a_small_talk_topic_is_a_fact(text):
    """Meals and weekends are small-talk topics; a routine about them is still standing knowledge."""
    assert [c.kind for c in extract(text).candidates] == ["fact"]


@pytest.mark.parametrize(
    "text",
    ["What database do we use?", "Where did we buy the grain dryer?", "Is our farm in Jiamusi",
     "Can you check the maintenance records of tractor 3?", "Please list this week's maintenance suggestions.",
     "Show me the maintenance plan."],
)
def test_questions_and_requests_give_nothing(text):
    assert extract(text).candidates == []


@pytest.mark.parametrize("text", ["Jon: The official opening night is tomorrow.", "Gina: Can't wait for tomorrow's grand opening!"])
def test_a_transcript_speakers_future_remark_is_not_a_task(text):
    """Said between people about their lives, not an arrangement of the agent's task: a task
    candidate would confine the message's episode to its own conversation."""
    assert not any(c.scope == "task" for c in extract(text).candidates)


@pytest.mark.parametrize("text", ["Opening night is March 20.", "The vendor demo is next Thursday at 2pm."])
def test_a_statement_with_a_time_ahead_is_remembered_not_a_task(text):
    """A date ahead does not make a one-time instruction (only "this time"-like words do)."""
    assert [c.scope for c in extract(text).candidates] == ["user"]


def test_an_explicit_temporary_instruction_in_a_transcript_line_stays_a_task():
    c = one("Caroline: Just for now, send the reports as PDF.")
    assert (c.kind, c.scope) == ("context", "task")


def test_one_speakers_statement_never_replaces_anothers_slot():
    older = ExistingMemory(short_id=1, kind="fact", content="Caroline: I live in Boston", slot_key=None)
    c = one("Melanie: We moved from Boston to Denver.", existing=[older])  # names Caroline's value as old
    assert c.supersedes == [] and c.operation == "ADD"


@pytest.mark.parametrize("text", ["As of today the night shift is covered by Priya.",
                                  "Starting next month our clinic opens at 8."])
def test_a_time_that_says_from_when_dates_the_state_it_begins(text):
    c = one(text)
    assert (c.kind, c.scope) == ("fact", "user"), c


def test_a_deviation_the_message_says_the_usual_follows_is_for_this_task_only():
    # The bare "Back to normal after that." marks the sentence before it and keeps nothing itself.
    c = one("For Friday's gig only I'll open with the acoustic set. Back to normal after that.")
    assert c.scope == "task" and "acoustic" in c.content
    assert one("Just the March invoices go to Dana, after that it's back to normal.").scope == "task"
    # A state that came back is no deviation.
    assert one("My blood pressure is back to normal now.").scope == "user"
