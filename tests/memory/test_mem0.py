"""The Mem0-compatible surface (memory/mem0/, docs/mem0.md), driven over HTTP by the real
`mem0ai` MemoryClient against the live test server."""
import os
import time

os.environ.setdefault("MEM0_TELEMETRY", "False")  # the client would otherwise report to PostHog

import httpx
import pytest
from mem0 import MemoryClient
from mem0.exceptions import MemoryError as Mem0Error

from memory.models import ForgetRule, Mem0AddEvent, Memory
from tenancy.models import SCOPE_MEM0_COMPAT, AuditEvent
from tenancy.services import api_key_create

live = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _mem0_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0"))


def compat_key(org) -> str:
    return api_key_create(org=org, name="mem0", scopes=[SCOPE_MEM0_COMPAT])[1]


@pytest.fixture
def connect(live_server):
    """MemoryClient factory. Each client's HTTP connections are closed while the live server still
    runs: a keep-alive socket left open would end its server thread after the test database is gone."""
    made = []

    def make(api_key: str, **kwargs) -> MemoryClient:
        made.append(MemoryClient(api_key=api_key, host=live_server.url, **kwargs))
        return made[-1]
    yield make
    for client in made:
        client.client.close()


@pytest.fixture
def client(connect, org) -> MemoryClient:
    return connect(compat_key(org))


@pytest.fixture
def other_client(connect, other_org) -> MemoryClient:
    return connect(compat_key(other_org))


def wait_event(client: MemoryClient, event_id: str, timeout: float = 30) -> dict:
    """Poll the add's event as a Mem0 user would, until extraction finished."""
    deadline = time.monotonic() + timeout
    while True:
        body = client.client.get(f"/v1/event/{event_id}/").json()
        if body["status"] in ("SUCCEEDED", "FAILED") or time.monotonic() > deadline:
            return body
        time.sleep(0.2)


def add(client: MemoryClient, messages, **kwargs) -> dict:
    answer = client.add(messages, **kwargs)
    assert answer["event_id"] and answer["status"] in ("PENDING", "RUNNING", "SUCCEEDED"), answer
    event = wait_event(client, answer["event_id"])
    assert event["status"] == "SUCCEEDED", event
    return event


def contents(page: dict) -> list[str]:
    return [m["memory"] for m in page["results"]]


@live
def test_add_with_inference_extracts_chinese_memories_with_metadata(client):
    event = add(client, "我对花生过敏，请记住。", user_id="u1", metadata={"source": "onboarding"})
    added = [r for r in event["results"] if r["event"] == "ADD"]
    assert added, event
    page = client.get_all(filters={"user_id": "u1"})
    assert page["count"] == len(page["results"]) >= 1
    memory = next(m for m in page["results"] if "花生" in m["memory"])
    assert isinstance(memory["id"], str) and memory["user_id"] == "u1"
    assert memory["metadata"] == {"source": "onboarding"}
    assert client.get(memory["id"])["memory"] == memory["memory"]
    found = client.search("我有什么过敏？", filters={"user_id": "u1"})
    assert found["results"] and "花生" in found["results"][0]["memory"], found
    assert found["results"][0]["id"] == memory["id"] and "score" in found["results"][0]
    assert found["results"][0]["metadata"] == {"source": "onboarding"}
    again = add(client, "我对花生过敏，请记住。", user_id="u1")  # a restatement: no second copy
    assert {(r["id"], r["event"]) for r in again["results"]} == {(memory["id"], "NOOP")}, again
    assert client.get_all(filters={"user_id": "u1"})["count"] == page["count"]


def http_status(excinfo) -> int:
    return int(excinfo.value.error_code.removeprefix("HTTP_"))


@live
def test_add_without_inference_stores_each_message_as_it_is(client):
    event = add(client, [{"role": "system", "content": "You are a farm assistant."},
                         {"role": "user", "content": "The north field is 120 hectares."},
                         {"role": "assistant", "content": "I would plant soybeans there."}],
                user_id="u1", infer=False, metadata={"topic": "fields"}, expiration_date="2030-01-31")
    assert [r["event"] for r in event["results"]] == ["ADD", "ADD"]
    by_text = {m["memory"]: m for m in client.get_all(filters={"user_id": "u1"})["results"]}
    assert set(by_text) == {"The north field is 120 hectares.", "I would plant soybeans there."}
    fact, suggestion = by_text["The north field is 120 hectares."], by_text["I would plant soybeans there."]
    assert (fact["kind"], fact["assertion"]) == ("fact", "user_stated")
    assert (suggestion["kind"], suggestion["assertion"]) == ("suggestion", "model_suggestion")
    assert fact["metadata"] == {"topic": "fields"} and fact["expiration_date"] == "2030-01-31"


@live
def test_supersede_update_and_history_through_the_client(client):
    add(client, "维保计划默认给我看未来两周的。", user_id="u1", timestamp=1772326800)
    add(client, "以后维保计划默认改成看未来一个月的。", user_id="u1", timestamp=1775005200)
    current = [m for m in client.get_all(filters={"user_id": "u1"})["results"] if "维保" in m["memory"]]
    assert len(current) == 1 and "一个月" in current[0]["memory"], current
    old = Memory.objects.get(org__slug="acme", status="superseded")
    assert client.get(str(old.id))["superseded_by"] == current[0]["id"]
    assert client.history(str(old.id))[-1]["superseded_by"] == current[0]["id"]

    updated = client.update(current[0]["id"], text="维保计划默认看未来三周的。")
    assert updated["memory"] == "维保计划默认看未来三周的。"
    history = client.history(current[0]["id"])
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert "一个月" in history[1]["old_memory"] and history[1]["new_memory"] == "维保计划默认看未来三周的。"
    client.update(current[0]["id"], metadata={"reviewed": True})
    again = client.get(current[0]["id"])
    assert again["metadata"] == {"reviewed": True} and again["memory"] == "维保计划默认看未来三周的。"
    assert len(client.history(current[0]["id"])) == 2  # metadata is no new content version
    with pytest.raises(Mem0Error) as excinfo:
        client.update(str(old.id), text="x")
    assert http_status(excinfo) == 409


@live
def test_second_user_and_second_org_never_see_the_memories(client, other_client, connect, org):
    add(client, "My vet is Dr. Wang.", user_id="u1")
    add(client, "I prefer tea over coffee.", user_id="u2")
    mine = client.get_all(filters={"user_id": "u1"})["results"]
    assert mine and all(m["user_id"] == "u1" for m in mine)
    assert not any("Wang" in text for text in contents(client.get_all(filters={"user_id": "u2"})))
    assert not any("Wang" in m["memory"] for m in client.search("Who is my vet?", filters={"user_id": "u2"})["results"])
    target = next(m for m in mine if "Wang" in m["memory"])
    assert other_client.get_all(filters={"user_id": "u1"})["results"] == []
    assert other_client.search("Who is my vet?", filters={"user_id": "u1"})["results"] == []
    for call in (lambda: other_client.get(target["id"]), lambda: other_client.history(target["id"]),
                 lambda: other_client.update(target["id"], text="changed"), lambda: other_client.delete(target["id"])):
        with pytest.raises(Mem0Error) as excinfo:
            call()
        assert http_status(excinfo) == 404
    as_u2 = connect(compat_key(org), client=httpx.Client(headers={"X-Memory-User": "u2"}))
    for call in (lambda: as_u2.get(target["id"]), lambda: as_u2.history(target["id"]),
                 lambda: as_u2.delete(target["id"])):
        with pytest.raises(Mem0Error) as excinfo:
            call()
        assert http_status(excinfo) == 404
    assert client.get(target["id"])["memory"] == target["memory"]
    assert Memory.objects.get(id=int(target["id"])).status == "active"


@live
def test_delete_is_an_audited_forget_and_the_old_message_does_not_bring_it_back(client):
    message = "我的主治医生是李大夫。"
    event = add(client, message, user_id="u1")
    [memory_id] = [r["id"] for r in event["results"] if r["event"] == "ADD"]
    assert client.delete(memory_id) == {"message": "Memory deleted successfully!"}
    with pytest.raises(Mem0Error) as excinfo:
        client.get(memory_id)
    assert http_status(excinfo) == 404
    row = Memory.objects.get(id=int(memory_id))
    assert row.status == "forgotten" and row.content == "" and row.metadata == {}
    assert ForgetRule.objects.filter(org=row.org, user_id="u1").exists()
    actions = set(AuditEvent.objects.filter(org=row.org).values_list("action", flat=True))
    assert {"forget.request", "memory.forget", "forget.execute"} <= actions
    assert AuditEvent.objects.filter(action="memory.forget", target_id=memory_id).exists()

    again = add(client, message, user_id="u1")
    assert not [r for r in again["results"] if r["event"] == "ADD"], again
    assert not any("李大夫" in text for text in contents(client.get_all(filters={"user_id": "u1"})))
    assert not any("李大夫" in m["memory"] for m in client.search("主治医生", filters={"user_id": "u1"})["results"])


@live
def test_delete_all_forgets_exactly_that_users_memories(client, other_client):
    add(client, "I live in Harbin.", user_id="u1")
    add(client, "My daughter is called Mei.", user_id="u1")
    add(client, "I live in Dalian.", user_id="u2")
    add(other_client, "I live in Harbin.", user_id="u1")
    add(client, "I prefer tea.", user_id="u1", infer=False, metadata={"note": "said at the fair"})
    with pytest.raises(Mem0Error) as excinfo:
        client.delete_all()  # no user: refused, never "every user"
    assert http_status(excinfo) == 400 and "user_id" in excinfo.value.message
    assert client.delete_all(user_id="u1") == {"message": "Memories deleted successfully!"}
    assert client.get_all(filters={"user_id": "u1"})["results"] == []
    assert any("Dalian" in text for text in contents(client.get_all(filters={"user_id": "u2"})))
    assert any("Harbin" in text for text in contents(other_client.get_all(filters={"user_id": "u1"})))
    acme = Memory.objects.filter(org__slug="acme").exclude(kind="episode")
    assert not acme.filter(user_id="u1", status="active").exists()
    assert acme.filter(user_id="u2", status="active").exists()
    assert AuditEvent.objects.filter(org__slug="acme", action="forget.execute").exists()
    assert not Mem0AddEvent.objects.filter(org__slug="acme", user_id="u1").exclude(metadata={}).exists()
    assert [u["name"] for u in client.users()["results"]] == ["u2"]


@live
def test_users_lists_the_users_with_memories(client):
    add(client, "I prefer short answers.", user_id="alice", infer=False)
    add(client, "I prefer long answers.", user_id="bob", infer=False)
    add(client, "My farm is in Jilin.", user_id="bob", infer=False)
    users = {u["name"]: u for u in client.users()["results"]}
    assert set(users) == {"alice", "bob"}
    assert users["bob"]["total_memories"] == 2 and users["bob"]["type"] == "user"
    assert client.delete_users(user_id="bob") == {"message": "Entity deleted successfully."}
    assert [u["name"] for u in client.users()["results"]] == ["alice"]
    assert client.get_all(filters={"user_id": "bob"})["results"] == []


@live
def test_only_mem0_compat_keys_may_name_the_user(connect, org):
    plain = api_key_create(org=org, name="plain")[1]
    client = connect(plain)
    with pytest.raises(Mem0Error) as excinfo:
        client.add("I like rice.", user_id="u1")
    assert http_status(excinfo) == 403 and "mem0_compat" in excinfo.value.message
    with pytest.raises(Mem0Error) as excinfo:
        client.get_all(filters={"user_id": "u1"})
    assert http_status(excinfo) == 403
    pinned = connect(plain, client=httpx.Client(headers={"X-Memory-User": "u1"}))
    add(pinned, "The irrigation pump is a Grundfos.", infer=False)
    assert contents(pinned.get_all()) == ["The irrigation pump is a Grundfos."]
    compat_pinned = connect(compat_key(org), client=httpx.Client(headers={"X-Memory-User": "u1"}))
    with pytest.raises(Mem0Error) as excinfo:
        compat_pinned.get_all(filters={"user_id": "u2"})
    assert http_status(excinfo) == 403
    with pytest.raises(ValueError):
        connect("mk_nope_nope")


@live
def test_unsupported_endpoints_are_501_and_unhonourable_options_400(client):
    add(client, "I prefer tea.", user_id="u1", infer=False)
    memory_id = client.get_all(filters={"user_id": "u1"})["results"][0]["id"]
    for call, feature in ((lambda: client.feedback(memory_id, "POSITIVE"), "feedback"),
                          (lambda: client.create_memory_export("{}", user_id="u1"), "export"),
                          (lambda: client.get_profile("u1"), "profile"),
                          (lambda: client.get_summary({"user_id": "u1"}), "summar"),
                          (lambda: client.get_project(), "projects"),
                          (lambda: client.project.get(), "projects"),
                          (lambda: client.get_webhooks("default"), "webhooks"),
                          (lambda: client.get_profile_settings(), "profile"),
                          (lambda: client.delete_users(agent_id="bot"), "agent")):
        with pytest.raises(Mem0Error) as excinfo:
            call()
        assert http_status(excinfo) == 501 and feature.lower() in excinfo.value.message.lower(), excinfo.value.message
    for call, name in ((lambda: client.get_all(filters={"OR": [{"user_id": "u1"}, {"user_id": "u2"}]}), "filters.OR"),
                       (lambda: client.search("tea", filters={"user_id": "u1", "categories": {"in": ["food"]}}),
                        "filters.categories"),
                       (lambda: client.search("tea", filters={"user_id": "u1"}, rerank=True), "rerank"),
                       (lambda: client.search("tea", filters={"user_id": {"in": ["u1", "u2"]}}), "filters.user_id"),
                       (lambda: client.add("x", user_id="u1", custom_instructions="only food"), "custom_instructions"),
                       (lambda: client.add("x", user_id="u1", app_id="crm"), "app_id"),
                       (lambda: client.delete_all(user_id="u1", agent_id="bot"), "agent_id")):
        with pytest.raises(Mem0Error) as excinfo:
            call()
        assert http_status(excinfo) == 400 and name in excinfo.value.message, excinfo.value.message
    assert client.get(memory_id)["memory"] == "I prefer tea."  # nothing refused changed anything


@live
def test_agent_and_run_ids_name_conversations_and_filter_by_them(client):
    add(client, "I prefer metric units.", user_id="u1", agent_id="farm-bot", run_id="r1", infer=False)
    add(client, "I prefer short answers.", user_id="u1", run_id="r2", infer=False)
    in_r1 = client.get_all(filters={"AND": [{"user_id": "u1"}, {"run_id": "r1"}]})["results"]
    assert [(m["memory"], m["agent_id"], m["run_id"]) for m in in_r1] == [("I prefer metric units.", "farm-bot", "r1")]
    assert contents(client.get_all(filters={"user_id": "u1", "agent_id": "farm-bot"})) == ["I prefer metric units."]
    assert len(client.get_all(filters={"user_id": "u1", "run_id": "*"})["results"]) == 2
    found = client.search("answers", filters={"user_id": "u1", "run_id": "r2"})["results"]
    assert [m["memory"] for m in found] == ["I prefer short answers."]


@live
def test_get_all_pages(client):
    add(client, [{"role": "user", "content": text} for text in (
        "The north field grows maize.", "Our tractor is a John Deere 6R.", "I want reports every Monday morning.")],
        user_id="u1", infer=False)
    first = client.get_all(filters={"user_id": "u1"}, page=1, page_size=2)
    assert first["count"] == 3 and len(first["results"]) == 2 and first["next"] and first["previous"] is None
    second = client.get_all(filters={"user_id": "u1"}, page=2, page_size=2)
    assert len(second["results"]) == 1 and second["next"] is None
    assert not {m["id"] for m in first["results"]} & {m["id"] for m in second["results"]}


@live
def test_events_belong_to_their_org(client, other_client):
    answer = client.add("I prefer tea.", user_id="u1", infer=False)
    assert other_client.client.get(f"/v1/event/{answer['event_id']}/").status_code == 404
    assert client.client.get("/v1/event/not-a-uuid/").status_code == 404
    assert client.client.get(f"/v1/event/{answer['event_id']}/").json()["status"] == "SUCCEEDED"


@pytest.mark.service_only  # topology 2; the embedded profile runs tasks in the request (eager)
@pytest.mark.worker
@live
def test_inferred_add_is_extracted_by_the_worker_and_its_event_says_when(own_index, celery_worker_session, client):
    import threading

    from celery.signals import task_postrun

    ran, main = [], threading.current_thread()

    def record(sender=None, **kwargs):
        if threading.current_thread() is not main:
            ran.append(sender.name)

    task_postrun.connect(record, weak=False)
    try:
        answer = client.add("我家的主力拖拉机是东方红LX904。", user_id="u1")
        event = wait_event(client, answer["event_id"], timeout=60)
    finally:
        task_postrun.disconnect(record)
    assert event["status"] == "SUCCEEDED" and event["completed_at"], event
    assert "memory.tasks.messages_extract" in ran  # the worker did it, not the request
    [memory_id] = [r["id"] for r in event["results"] if r["event"] == "ADD"]
    assert "东方红" in client.get(memory_id)["memory"]
    assert any(m["id"] == memory_id for m in client.search("拖拉机是什么牌子", filters={"user_id": "u1"})["results"])


def test_create_api_key_command_grants_the_mem0_scope(capsys, db):
    from django.core.management import CommandError, call_command

    from tenancy.services import api_key_verify

    call_command("create_api_key", "acme", "--name", "mem0", "--mem0-compat")
    key = api_key_verify(raw_key=capsys.readouterr().out.strip())
    assert key is not None and key.scopes == [SCOPE_MEM0_COMPAT]
    call_command("create_api_key", "acme", "--name", "plain")
    assert api_key_verify(raw_key=capsys.readouterr().out.strip()).scopes == []
    with pytest.raises(CommandError, match="Unknown scope"):
        call_command("create_api_key", "acme", "--scope", "admin")


BAD_REQUESTS = [
    ("post", "/v3/memories/add/", {"messages": "hi", "user_id": "u1"}, "messages"),
    ("post", "/v3/memories/add/", {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                                   "user_id": "u1"}, "messages[0].content"),
    ("post", "/v3/memories/add/", {"messages": [{"role": "tool", "content": "42"}], "user_id": "u1"}, "messages[0].role"),
    ("post", "/v3/memories/add/", {"messages": [{"role": "user", "content": "hi"}]}, "user_id"),
    ("post", "/v3/memories/add/", {"messages": [{"role": "user", "content": "hi"}], "user_id": "u1",
                                   "agent_id": "a|b"}, "agent_id"),
    ("post", "/v3/memories/add/", {"messages": [{"role": "user", "content": "hi"}], "user_id": "u1",
                                   "filters": {"user_id": "u2"}}, "conflicts"),
    ("post", "/v3/memories/add/", {"messages": [{"role": "user", "content": "hi"}], "user_id": "u1",
                                   "expiration_date": "2030-01-01"}, "expiration_date"),
    ("post", "/v3/memories/add/", {"messages": [{"role": "user", "content": "hi"}], "user_id": "u1",
                                   "surprise": True}, "surprise"),
    ("post", "/v3/memories/search/", {"query": "x", "filters": "u1"}, "filters"),
    ("post", "/v3/memories/search/", {"query": "x", "filters": {"user_id": "u1"}, "top_k": 0}, "top_k"),
    ("post", "/v3/memories/search/", {"query": "x", "filters": {"user_id": "u1"}, "top_k": 10**6}, "top_k"),
    ("post", "/v3/memories/search/", {"query": "x", "filters": {"user_id": "u1"}, "reference_date": "soon"},
     "reference_date"),
    ("post", "/v3/memories/search/", {"query": "x", "filters": {"user_id": "u1", "created_at": {"gte": "x"}}},
     "filters.created_at.gte"),
    ("post", "/v3/memories/search/", {"query": "x", "filters": {"AND": {"user_id": "u1"}}}, "filters.AND"),
    ("post", "/v3/memories/search/", {"query": "x", "filters": {"user_id": "u1"}, "latest_only": False},
     "latest_only"),
    ("post", "/v3/memories/?page=0", {"filters": {"user_id": "u1"}}, "page"),
    ("post", "/v3/memories/?page_size=100000", {"filters": {"user_id": "u1"}}, "page_size"),
    ("delete", "/v1/memories/?user_id=u1&filters=x", None, "filters"),
    ("post", "/v3/memories/add/", {"messages": [{"role": "user", "content": "hi"}], "user_id": "u1",
                                   "timestamp": 2**41}, "timestamp"),
    ("post", "/v3/memories/search/", {"query": "x", "filters": {"user_id": "u1"}, "reference_date": 10**20},
     "reference_date"),
    ("post", "/v3/memories/", {"filters": {"user_id": "u1", "updated_at": {"lt": 1e300}}}, "filters.updated_at.lt"),
    ("post", "/v3/memories/", {"filters": {"user_id": 7}}, "filters.user_id"),
    ("post", "/v3/memories/", [{"user_id": "u1"}], "non_field_errors"),
]


@pytest.mark.parametrize("method,path,body,field", BAD_REQUESTS)
def test_bad_input_is_a_400_naming_the_field(org, method, path, body, field):
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {compat_key(org)}")
    response = getattr(api, method)(path, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["detail"], response.json()


def test_ids_that_name_nothing_are_404(org):
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {compat_key(org)}")
    for path in ("/v1/memories/abc/", f"/v1/memories/{2**70}/", "/v1/memories/-1/", "/v1/memories/999/history/",
                 "/v1/event/0b8c3c56-7c5b-4a3e-9a53-1a2b3c4d5e6f/"):
        assert api.get(path).status_code == 404, path
    assert APIClient().get("/v1/ping/").status_code == 401
    assert APIClient().post("/v1/batch/", {}, format="json").status_code == 401  # 501 only after the key


@live
def test_an_org_that_reviews_forgets_gets_a_pending_deletion(client, org):
    org.forget_requires_approval = True
    org.save(update_fields=["forget_requires_approval"])
    event = add(client, "I prefer tea.", user_id="u1", infer=False)
    memory_id = event["results"][0]["id"]
    answer = client.delete(memory_id)
    assert answer["status"] == "pending" and answer["forget_request_id"], answer
    assert client.get(memory_id)["memory"] == "I prefer tea."  # nothing forgotten before an operator approves
    from memory.models import ForgetRequest

    assert ForgetRequest.objects.get(id=int(answer["forget_request_id"])).status == "pending"


FIELDS = ["messages", "memories", "memory_id", "user_id", "agent_id", "run_id", "filters", "metadata", "infer", "timestamp", "query",
          "top_k", "threshold", "reference_date", "text", "expiration_date", "page", "AND", "created_at", "role", "content"]


def _json_bodies():
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False) | \
        st.text(max_size=12) | st.sampled_from(["u1", "*", "2026-01-01", "user", "gte"])
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) |
                          st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=5), inner, max_size=3), max_leaves=8)
    return st.dictionaries(st.sampled_from(FIELDS), values, max_size=5) | values


ENDPOINTS = [("post", "/v3/memories/add/"), ("post", "/v3/memories/search/"), ("post", "/v3/memories/"),
             ("put", "/v1/memories/1/"), ("post", "/v3/memories/?page=2&page_size=3"), ("put", "/v1/batch/"),
             ("delete", "/v1/batch/")]


@pytest.mark.parametrize("method,path", ENDPOINTS)
def test_fuzzed_bodies_never_answer_5xx(org, method, path):
    from hypothesis import HealthCheck, given
    from hypothesis import settings as hsettings
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {compat_key(org)}")

    @hsettings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")), deadline=None, derandomize=True,
               suppress_health_check=list(HealthCheck))
    @given(body=_json_bodies())
    def check(body):
        response = getattr(api, method)(path, body, format="json")
        assert response.status_code < 500, (body, response.content)
    check()


@live
def test_the_async_client_works_too(live_server, org):
    import anyio
    from mem0 import AsyncMemoryClient

    key = compat_key(org)

    async def main():
        async with AsyncMemoryClient(api_key=key, host=live_server.url) as client:
            answer = await client.add("我们合作社的烘干机是南京买的。", user_id="u1", infer=False)
            found = await client.search("烘干机在哪里买的", filters={"user_id": "u1"})
            return answer, found
    answer, found = anyio.run(main)
    assert answer["status"] == "SUCCEEDED"
    assert found["results"][0]["memory"] == "我们合作社的烘干机是南京买的。"


@live
def test_batch_update_and_delete_check_every_id_first(client, other_client):
    add(client, [{"role": "user", "content": text} for text in (
        "The north field grows maize.", "Our tractor is a John Deere 6R.", "I want reports every Monday morning.")],
        user_id="u1", infer=False)
    ids = {m["memory"]: m["id"] for m in client.get_all(filters={"user_id": "u1"})["results"]}
    field, tractor, reports = ids["The north field grows maize."], ids["Our tractor is a John Deere 6R."], \
        ids["I want reports every Monday morning."]
    answer = client.batch_update([{"memory_id": field, "text": "The north field grows soybeans."},
                                  {"memory_id": tractor, "metadata": {"checked": True}}])
    assert answer == {"message": "Successfully updated 2 memories."}
    assert client.get(field)["memory"] == "The north field grows soybeans."
    assert client.get(tractor)["metadata"] == {"checked": True}
    with pytest.raises(Mem0Error) as excinfo:  # another org's id: nothing changes, not even the first item
        other_client.batch_update([{"memory_id": field, "text": "x"}])
    assert http_status(excinfo) == 404
    with pytest.raises(Mem0Error) as excinfo:
        client.batch_update([{"memory_id": reports, "text": "Reports on Fridays."}, {"memory_id": "999999", "text": "x"}])
    assert http_status(excinfo) == 404 and "memories[1]" in excinfo.value.message
    assert client.get(reports)["memory"] == "I want reports every Monday morning."

    assert client.batch_delete([{"memory_id": field}, {"memory_id": tractor}]) == {
        "message": "Successfully deleted 2 memories."}
    assert contents(client.get_all(filters={"user_id": "u1"})) == ["I want reports every Monday morning."]
    assert Memory.objects.filter(id__in=[int(field), int(tractor)], status="forgotten").count() == 2
    assert ForgetRule.objects.filter(org__slug="acme", user_id="u1").exists()
