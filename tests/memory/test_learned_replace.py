"""The learned judge's replaces in the write path (D25, MEMORY_LEARNED_REPLACE): a change told in words
the subject rules do not read as one (no cue they list, the old value only implied) replaces the old
statement; a look-alike about another person stays beside it; with the setting off the rules alone decide."""
import pytest

from memory.models import Memory
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db

# (older, newer, a word of the new value). The third is told as an event: the event replaces the state.
CHANGES = [
    ("我每天早上跑步五公里。", "膝盖不太行了，现在早上改游泳了，一次一千米。", "游泳"),
    ("I take 10mg of atorvastatin every night.", "My doctor bumped my atorvastatin up to 20mg.", "20mg"),
    ("Our staging server runs on Ubuntu 20.04.", "We finally upgraded staging to Ubuntu 24.04 last week.", "24.04"),
]


def say(api, conv, content, at):
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages",
                        {"role": "user", "content": content, "occurred_at": at}, format="json")
    assert response.status_code == 201, response.content


@pytest.fixture(autouse=True)
def learned_replace_on(settings):
    """On by default since session 24 (D31); set here so the mechanism is tested whatever the environment says."""
    settings.MEMORY_LEARNED_REPLACE = {**settings.MEMORY_LEARNED_REPLACE, "enabled": True}


def active() -> list[Memory]:
    """The user's active memories other than episodes (what recall serves as standing)."""
    return list(Memory.objects.filter(status="active", scope="user").exclude(kind="episode"))


def tell(api, older, newer) -> Memory:
    """Says both, a month apart; the older statement's memory."""
    conv = create_conversation(api)
    say(api, conv, older, "2026-03-02T09:00:00+08:00")
    [old] = active()
    say(api, conv, newer, "2026-04-12T09:00:00+08:00")
    old.refresh_from_db()
    return old


@pytest.mark.parametrize("older,newer,value", CHANGES)
def test_a_change_the_rules_do_not_read_replaces_the_old_statement(api, older, newer, value):
    old = tell(api, older, newer)
    assert old.status == "superseded"
    [new] = active()
    assert value in new.content and old.superseded_by_id == new.id


@pytest.mark.parametrize("older,newer,value", CHANGES)
def test_with_the_learned_replace_off_the_rules_leave_both(api, settings, older, newer, value):
    settings.MEMORY_LEARNED_REPLACE = {**settings.MEMORY_LEARNED_REPLACE, "enabled": False}
    assert tell(api, older, newer).status == "active"
    assert len(active()) == 2


@pytest.mark.parametrize("older,newer", [("我儿子对花生过敏。", "我女儿对芒果过敏。"),
                                         ("I had a coffee with Anna at the station.", "I had a coffee with Bob at the station.")])
def test_a_look_alike_about_another_person_stays(api, older, newer):
    assert tell(api, older, newer).status == "active"
    assert len(active()) == 2


def test_a_memory_whose_validity_ended_before_it_was_written_replaces_nothing(org):
    """What held then ("during the old contract", valid_to in the past) does not replace what holds now;
    the same statement without an end replaces it (the judge reads it as a change), so the guard is
    what keeps the habit standing."""
    from datetime import timedelta

    from django.utils import timezone

    from tests.console.helpers import write

    habit = "The plant manager drinks dark roast coffee every morning before the shift"
    then = "The plant manager drank instant coffee during the old contract"
    current = write(org, habit, user_id="u1").memory
    write(org, then, user_id="u1", valid_to=timezone.now() - timedelta(days=1))
    current.refresh_from_db()
    assert current.status == "active"
    other = write(org, habit, user_id="u2").memory
    write(org, then, user_id="u2")
    other.refresh_from_db()
    assert other.status == "superseded"


def test_an_event_is_judged_as_an_event_and_replaces_only_when_sure(org):
    """A user's event replaces the fact it changes (D29) only from MEMORY_LEARNED_REPLACE["event_min"]:
    most events change nothing. An award in one's ward is not a new job; an upgrade told as an event is
    the new version."""
    from tests.console.helpers import write

    job = write(org, "I work as a nurse at St Vincent's Hospital in Sydney, in the cardiac ward").memory
    write(org, "In March I was awarded Nurse of the Year for the cardiac unit", kind="event")
    job.refresh_from_db()
    assert job.status == "active"
    staging = write(org, "Our staging server runs on Ubuntu 20.04.").memory
    write(org, "We finally upgraded staging to Ubuntu 24.04 last week.", kind="event")
    staging.refresh_from_db()
    assert staging.status == "superseded"


def test_the_judges_band_under_the_replace_floor_flags_a_possible_conflict(org, settings):
    """From the judge's trained band (conflict null) to min, both stay active and the pair is queued for
    review (DESIGN §5); replacing from the band instead supersedes the older."""
    from memory.learn.judge_model import load_model
    from memory.models import MemoryConflict
    from tests.console.helpers import write

    landlord = "My landlord in Melbourne is Mr. George Papadopoulos, he lives in Brunswick"
    moved = "I moved to Melbourne in February 2023 for a job at Monash University"
    older = write(org, landlord, user_id="u1").memory
    newer = write(org, moved, user_id="u1").memory
    older.refresh_from_db()
    assert older.status == "active"
    assert MemoryConflict.objects.filter(older=older, newer=newer, status="open").exists()
    settings.MEMORY_LEARNED_REPLACE = {**settings.MEMORY_LEARNED_REPLACE, "min": load_model().bands["supersede"]}
    other = write(org, landlord, user_id="u2").memory
    write(org, moved, user_id="u2")
    other.refresh_from_db()
    assert other.status == "superseded"
