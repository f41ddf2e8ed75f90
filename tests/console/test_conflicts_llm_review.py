"""The conflicts queue says whether the LLM reviewer (D28) looked at a pair and what it said."""
import pytest
from django.urls import reverse

from console.roles import APPROVER, ensure_roles
from memory.services.conflicts import conflict_record
from memory.services.llm_review import llm_review_run
from tests.console.helpers import make_operator, write
from tests.memory.extraction.stub_llm_server import StubLLMServer

pytestmark = pytest.mark.django_db


def _pair(org, older, newer):
    return conflict_record(older=write(org, older, dedup=False).memory, newer=write(org, newer, dedup=False).memory,
                           score=0.6, signals={"subject": 0.6})


def _section(html: str, conflict_id: int) -> str:
    start = html.index(f'id="conflict-{conflict_id}"')
    end = html.find('class="console-section conflict"', start)
    return html[start:end if end > 0 else len(html)]


def test_the_queue_shows_the_llm_verdict(client, org, settings):
    unsure = _pair(org, "The forklift is serviced by Kion", "Jungheinrich handles the forklifts")
    decided = _pair(org, "The shop opens at 9", "The shop now opens at 10")
    with StubLLMServer() as stub:
        stub.answer_reviews()
        settings.LLM_BASE_URL, settings.LLM_MODEL = stub.base_url, "stub-model"
        llm_review_run()
    untouched = _pair(org, "Our printer is a Canon", "The printer is an HP")
    user = make_operator("approver", is_staff=True, is_superuser=False)
    user.groups.add(ensure_roles()[APPROVER])
    client.force_login(user)

    html = client.get(reverse("console:conflicts")).content.decode()
    assert "LLM review: <span class=\"console-badge\">unsure</span> by llm-review:stub-model" in _section(html, unsure.id)
    assert "yours to decide" in _section(html, unsure.id)
    assert "LLM review: not reviewed" in _section(html, untouched.id)
    assert "signals: subject 0.6" in _section(html, unsure.id) and "llm_review" not in html  # not among the scores

    html = client.get(reverse("console:conflicts") + "?status=superseded").content.decode()
    section = _section(html, decided.id)
    assert "by llm-review:stub-model" in section and '<span class="console-badge">replaces</span>' in section
