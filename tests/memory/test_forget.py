"""A forgotten memory is gone from MySQL content, the vector index, the cache, recall, context and
re-extraction."""
import json

import pytest

from conversations.models import Message
from memory.models import ForgetRequest, ForgetRule, Memory, MemoryEmbedding, MemoryVersion
from memory.vector_index import get_vector_index
from memory.vectors import active_collection
from tenancy.models import AuditEvent
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db
SECRET = "杭州西湖区文三路"


def say(api, conv, content):
    assert api.post(f"/api/v1/conversations/{conv['id']}/messages", {"role": "user", "content": content},
                    format="json").status_code == 201


def say_turns(api, conv, user, assistant):
    """A user turn and the assistant's answer in one batch, as an agent service appends a turn."""
    messages = [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    assert api.post(f"/api/v1/conversations/{conv['id']}/messages/batch", {"messages": messages},
                    format="json").status_code == 201


def everything_visible(api, conv) -> str:
    recall = api.post("/api/v1/recall", {"query": "我住在哪里", "k": 20}, format="json").json()
    ctx = api.post(f"/api/v1/conversations/{conv['id']}/context", {"message": "我住在哪里"}, format="json").json()
    return json.dumps(recall, ensure_ascii=False) + json.dumps(ctx, ensure_ascii=False)


def forget_by_query(api, query):
    preview = api.post("/api/v1/forget/preview", {"query": query}, format="json").json()["matches"]
    assert preview, "the preview should find the address"
    response = api.post("/api/v1/forget", {"query": query, "memory_ids": [m["id"] for m in preview]}, format="json")
    assert response.status_code == 201, response.content
    return response.json(), preview


def test_forget_by_query_removes_everything(api):
    s1 = create_conversation(api, "s1")
    say(api, s1, f"我家住在{SECRET}。")
    ids = list(Memory.objects.values_list("id", flat=True))
    assert SECRET in everything_visible(api, create_conversation(api, "probe"))
    org_id = Memory.objects.first().org_id
    from memory.cache import memory_cache, standing_memories

    assert set(standing_memories(org_id, "u1")) & set(ids)  # the cache hash holds the fact now
    request, preview = forget_by_query(api, "我的住址")
    assert api.get(f"/api/v1/forget/{request['id']}").json()["status"] == "executed"
    assert {m["id"] for m in preview} == set(ids)  # the fact and the episode it came from
    # MySQL: content redacted in every version, messages redacted, embeddings gone
    assert not Memory.objects.filter(content__contains="文三路").exists()
    assert not MemoryVersion.objects.filter(content__contains="文三路").exists()
    assert not Message.objects.filter(content__contains="文三路").exists()
    assert not MemoryEmbedding.objects.filter(memory_id__in=ids).exists()
    assert set(Memory.objects.values_list("status", flat=True)) == {"forgotten"}
    # vector index: points physically deleted
    index = get_vector_index()
    assert not {pid for pid, _ in index.scroll(collection=active_collection())} & set(ids)
    # cache: the per-user hash no longer holds it
    assert not set(memory_cache.get_all(org_id, "u1") or {}) & set(ids)
    # recall and context
    probe = create_conversation(api, "probe2")
    assert "文三路" not in everything_visible(api, probe)
    # a rule blocks re-extraction and the audit log holds no content
    assert ForgetRule.objects.count() >= 1
    assert "文三路" not in json.dumps(list(AuditEvent.objects.values("detail")), ensure_ascii=False)


def test_the_turn_that_asks_to_forget_is_neither_kept_nor_taken_for_its_target(api):
    """The user asks in the conversation, then the agent forwards the request by query: the asking turn
    is not remembered as a statement, and the preview takes the address, not the turn that asked."""
    s1 = create_conversation(api, "s1")
    say(api, s1, "I stay at my ex's place some weekends, 44 Linden Court, unit 2, so the kids can see their dad.")
    ask = "hey, please forget my ex's address, the kids' stuff is enough."
    say(api, s1, ask)
    assert not Memory.objects.filter(content__contains="please forget").exclude(kind="episode").exists()
    _, preview = forget_by_query(api, "my ex's address")
    assert any("Linden Court" in m["content"] for m in preview)
    assert all("please forget" not in m["content"] for m in preview)
    assert not Memory.objects.filter(status="active", content__contains="Linden").exists()


def test_a_memory_that_restates_the_request_is_not_its_target(api):
    """Even kept as a memory of its own (an agent wrote it down), the request is not what it asks about."""
    say(api, create_conversation(api, "s1"), "My ex lives at 44 Linden Court, unit 2.")
    assert api.post("/api/v1/memories", {"kind": "preference", "content": "Please forget my ex's address."},
                    format="json").status_code == 201
    _, preview = forget_by_query(api, "my ex's address")
    assert any("Linden Court" in m["content"] for m in preview)
    assert all("forget" not in m["content"] for m in preview)


def test_reextraction_cannot_bring_it_back(api):
    s1 = create_conversation(api, "s1")
    say(api, s1, f"我家住在{SECRET}。")
    memory = Memory.objects.exclude(kind="episode").get()
    assert api.post("/api/v1/forget", {"memory_ids": [memory.id]}, format="json").status_code == 201
    # message kept (explicit id forget does not cover messages) but extraction is blocked
    assert Message.objects.filter(content__contains="文三路").exists()
    api.post(f"/api/v1/conversations/{s1['id']}/reextract", {}, format="json")
    assert not Memory.objects.filter(status="active", content__contains="文三路").exists()  # episode included
    assert not AuditEvent.objects.filter(action="memory.restated_after_forget").exists()


def test_a_statement_made_after_the_forget_is_a_new_act_stored_and_marked(api):
    s1 = create_conversation(api, "s1")
    say(api, s1, f"我家住在{SECRET}。")
    memory = Memory.objects.exclude(kind="episode").get()
    request = api.post("/api/v1/forget", {"memory_ids": [memory.id]}, format="json").json()
    rule = ForgetRule.objects.filter(request_id=request["id"]).first()
    assert rule is not None
    # The user says it again later, in a new conversation: a new act, stored...
    say(api, create_conversation(api, "s2"), f"我家住在{SECRET}。")
    again = Memory.objects.filter(status="active", content__contains="文三路").exclude(kind="episode").get()
    # ...and on record with the rule it would have matched (the console's audit log shows it)
    event = AuditEvent.objects.get(action="memory.restated_after_forget", target_id=str(again.id))
    assert event.detail["forget_rule"] in set(ForgetRule.objects.filter(request_id=request["id"]).values_list("id", flat=True))
    assert event.detail["forget_request"] == request["id"]
    # the old message still cannot bring the forgotten copy back
    api.post(f"/api/v1/conversations/{s1['id']}/reextract", {}, format="json")
    assert Memory.objects.filter(status="active", content__contains="文三路").exclude(kind="episode").count() == 1


def test_forgetting_a_fact_removes_its_echoes(api):
    """The user's turn, the assistant's acknowledgement and a restatement elsewhere go with the fact;
    a different fact of the same thing (and small talk) stays."""
    s1 = create_conversation(api, "s1")
    turns = [("user", "车队共用加油卡的密码是880615。"), ("assistant", "好的，记下了：共用加油卡密码 880615。"),
             ("user", "另外，加油卡余额低于五千的时候提醒我充值。"), ("assistant", "好的，余额低于五千会提醒你。")]
    for role, content in turns:
        assert api.post(f"/api/v1/conversations/{s1['id']}/messages", {"role": role, "content": content},
                        format="json").status_code == 201
    s2 = create_conversation(api, "s2")
    assert api.post(f"/api/v1/conversations/{s2['id']}/messages",
                    {"role": "assistant", "content": "提醒一下，加油卡密码是880615，别外传。"}, format="json").status_code == 201
    probe = create_conversation(api, "probe")
    before = api.post("/api/v1/recall", {"query": "加油卡密码是多少", "k": 10}, format="json").json()
    assert "880615" in json.dumps(before, ensure_ascii=False)
    preview = api.post("/api/v1/forget/preview", {"query": "加油卡密码"}, format="json").json()
    echoed = {e["content"]: e["why"] for e in preview["echoes"]}
    assert all("五千" not in c for c in echoed) and all("五千" not in m["content"] for m in preview["matches"])
    shown = json.dumps(preview, ensure_ascii=False)
    assert "好的，记下了：共用加油卡密码 880615。" in shown and "提醒一下，加油卡密码是880615，别外传。" in shown
    ids = [m["id"] for m in preview["matches"]]
    response = api.post("/api/v1/forget", {"query": "加油卡密码", "memory_ids": ids}, format="json")
    assert response.status_code == 201
    after_recall = api.post("/api/v1/recall", {"query": "加油卡密码是多少", "k": 10}, format="json").json()
    context = api.post(f"/api/v1/conversations/{probe['id']}/context", {"message": "加油卡密码是多少"}, format="json").json()
    seen = json.dumps(after_recall, ensure_ascii=False) + json.dumps(context, ensure_ascii=False)
    assert "880615" not in seen  # neither the fact nor any echo of it
    assert not Memory.objects.filter(content__contains="880615").exists()
    assert Memory.objects.filter(status="active", kind="episode", content__contains="五千").count() == 2


def test_forget_by_id_also_removes_the_assistant_acknowledgement(api):
    s1 = create_conversation(api, "s1")
    for role, content in (("user", "农机库房钥匙柜的密码是58372，别告诉外人。"), ("assistant", "好的，记下了：钥匙柜密码 58372。"),
                          ("user", "今天天气不错。"), ("assistant", "是的，适合晾晒。")):
        api.post(f"/api/v1/conversations/{s1['id']}/messages", {"role": role, "content": content}, format="json")
    fact = Memory.objects.exclude(kind="episode").get(content__contains="58372")
    assert api.post("/api/v1/forget", {"memory_ids": [fact.id]}, format="json").status_code == 201
    assert not Memory.objects.filter(status="active", content__contains="58372").exists()
    assert Memory.objects.filter(status="active", kind="episode", content__contains="晾晒").exists()
    recall = api.post("/api/v1/recall", {"query": "钥匙柜密码", "k": 10}, format="json").json()
    assert "58372" not in json.dumps(recall, ensure_ascii=False)


def test_forget_is_idempotent(api):
    say(api, create_conversation(api), "我们合作社今年的采购预算是八十万。")
    memory = Memory.objects.exclude(kind="episode").get()
    for _ in range(2):
        assert api.post("/api/v1/forget", {"memory_ids": [memory.id]}, format="json").status_code == 201
    assert Memory.objects.get(id=memory.id).status == "forgotten"
    assert ForgetRequest.objects.filter(status="executed").count() == 2


def test_cannot_forget_someone_elses_memory(api, api_u2):
    say(api, create_conversation(api), "我们合作社今年的采购预算是八十万。")
    memory = Memory.objects.exclude(kind="episode").get()
    response = api_u2.post("/api/v1/forget", {"memory_ids": [memory.id]}, format="json")
    assert response.status_code == 400 and "memory_ids" in response.json()
    assert Memory.objects.get(id=memory.id).status == "active"


def test_forget_everything_about_me(api, api_u2):
    say(api, create_conversation(api, "a"), "我们合作社今年的采购预算是八十万。")
    say(api_u2, create_conversation(api_u2, "b"), "我喜欢简洁的回答。")
    assert api.post("/api/v1/forget", {"everything": True}, format="json").status_code == 201
    assert set(Memory.objects.filter(user_id="u1").values_list("status", flat=True)) == {"forgotten"}
    assert not Message.objects.filter(user_id="u1").exclude(content="").exists()
    assert Memory.objects.filter(user_id="u2", status="active").exists()  # other users untouched


def test_org_setting_makes_requests_wait_for_an_operator(api, org, django_capture_on_commit_callbacks):
    org.forget_requires_approval = True
    org.save()
    say(api, create_conversation(api), "我们合作社今年的采购预算是八十万。")
    memory = Memory.objects.exclude(kind="episode").get()
    request = api.post("/api/v1/forget", {"memory_ids": [memory.id]}, format="json").json()
    assert request["status"] == "pending"
    assert Memory.objects.get(id=memory.id).status == "active"
    from memory.services.forget import forget_request_decide

    with django_capture_on_commit_callbacks(execute=True):
        forget_request_decide(request=ForgetRequest.objects.get(id=request["id"]), approve=True, operator="op1")
    assert api.get(f"/api/v1/forget/{request['id']}").json()["status"] == "executed"
    assert Memory.objects.get(id=memory.id).status == "forgotten"


def test_revoked_source_hides_derived_memories_until_restored(api, api_u2):
    conv = create_conversation(api, "s1")
    say(api, conv, "我们合作社今年的采购预算是八十万。")
    query = {"query": "今年采购预算是多少"}
    assert "八十万" in json.dumps(api.post("/api/v1/recall", query, format="json").json(), ensure_ascii=False)
    api.post(f"/api/v1/conversations/{conv['id']}/access/revoke", {"user": "u1"}, format="json")
    assert "八十万" not in json.dumps(api.post("/api/v1/recall", query, format="json").json(), ensure_ascii=False)
    api.post(f"/api/v1/conversations/{conv['id']}/access/grant", {"user": "u1"}, format="json")
    assert "八十万" in json.dumps(api.post("/api/v1/recall", query, format="json").json(), ensure_ascii=False)


def test_executed_forget_answer_names_what_it_did(api):
    """The answer of an executed forget lists the memories forgotten and the messages redacted; the
    defaults of include_messages (query: yes, explicit ids: no) show in it."""
    conv = create_conversation(api, "s1")
    say(api, conv, f"我家住在{SECRET}。")
    message_id = Message.objects.get(content__contains="文三路").id
    created, preview = forget_by_query(api, "我的住址")
    request = api.get(f"/api/v1/forget/{created['id']}").json()
    assert request["status"] == "executed"
    assert request["result"]["redacted_message_ids"] == [message_id]
    assert request["result"]["messages_redacted"] == 1
    assert sorted(request["result"]["forgotten_memory_ids"]) == sorted(m["id"] for m in preview)

    say(api, conv, "我们合作社今年的采购预算是八十万。")
    memory = Memory.objects.filter(status="active").exclude(kind="episode").get()
    by_id = api.get(f"/api/v1/forget/{api.post('/api/v1/forget', {'memory_ids': [memory.id]}, format='json').json()['id']}").json()
    # The memory and its echoes (the episode of the message that stated it) go together.
    echo_ids = set(Memory.objects.filter(kind="episode", status="forgotten").values_list("id", flat=True))
    assert by_id["result"]["echoes_forgotten"] == 1
    assert set(by_id["result"]["forgotten_memory_ids"]) == {memory.id} | (echo_ids - {m["id"] for m in preview})
    assert by_id["result"]["redacted_message_ids"] == []  # explicit ids keep their messages by default
    budget_message = Message.objects.get(content__contains="八十万").id
    created = api.post("/api/v1/forget", {"memory_ids": [memory.id], "include_messages": True}, format="json").json()
    with_messages = api.get(f"/api/v1/forget/{created['id']}").json()
    assert with_messages["result"]["redacted_message_ids"] == [budget_message]
    assert Message.objects.get(id=budget_message).redacted


@pytest.mark.django_db(transaction=True)
def test_a_forget_that_meets_lock_contention_is_retried_not_left_half_done(org, monkeypatch):
    """A concurrent reader can hold a table lock when the execution writes (shared-cache SQLite answers
    "table is locked" at once; MariaDB a deadlock): the memory's transaction is rolled back and run
    again, so the request is executed whole and nothing of the failed attempt is left behind."""
    from django.db import OperationalError

    from memory.services import forget as forget_service
    from memory.services.memories import MemoryInput, memory_write

    memory = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="我们合作社今年的采购预算是八十万。",
                                      assertion="user_stated", created_by="api", actor="test")).memory
    request = ForgetRequest.objects.create(org=org, subject_user="u1", requested_by="u1", target="memory",
                                           memory=memory, matched_ids=[memory.id], status="approved")
    real_terms, attempts = forget_service.MemoryTerms, []

    class LockedOnce:  # the terms table, locked by another connection on the first attempt
        class objects:
            @staticmethod
            def filter(**kwargs):
                attempts.append(kwargs)
                if len(attempts) == 1:
                    raise OperationalError("database table is locked: memory_memoryterms")
                return real_terms.objects.filter(**kwargs)

    monkeypatch.setattr(forget_service, "MemoryTerms", LockedOnce)
    executed = forget_service.forget_request_execute(request_id=request.id)
    assert len(attempts) == 2
    assert executed.status == "executed" and executed.result["forgotten_memory_ids"] == [memory.id]
    assert Memory.objects.get(id=memory.id).status == "forgotten"
    # The failed attempt's rules and redactions were rolled back: one rule per content hash, not two.
    hashes = set(MemoryVersion.objects.filter(memory=memory).values_list("content_hash", flat=True)) | {memory.content_hash}
    assert ForgetRule.objects.filter(request=request).count() == len(hashes)


def test_a_statement_made_while_the_forget_waits_survives_its_execution(api, org, django_capture_on_commit_callbacks):
    """DESIGN §9: a rule guards what existed when the user asked; what the user says after asking is a
    new act, also when the request executes later (a worker's queue, an operator's approval)."""
    from memory.services.forget import forget_request_decide

    org.forget_requires_approval = True
    org.save()
    s1 = create_conversation(api, "s1")
    say_turns(api, s1, "我常去的健身房是望京的超级猩猩。", "好的，记住了：常去望京超级猩猩。")
    fact = Memory.objects.exclude(kind="episode").get()
    request, _ = forget_by_query(api, "我常去的健身房")
    say_turns(api, create_conversation(api, "s2"), "最近又恢复锻炼了，还是去望京那家超级猩猩，一周三次。", "不错，坚持下去！")
    with django_capture_on_commit_callbacks(execute=True):
        forget_request_decide(request=ForgetRequest.objects.get(id=request["id"]), approve=True, operator="op1")
    assert Memory.objects.get(id=fact.id).status == "forgotten"
    items = api.post("/api/v1/recall", {"query": "我平时在哪家健身房练", "k": 5}, format="json").json()["items"]
    assert any(i["kind"] != "episode" and "超级猩猩" in i["content"] for i in items), items
    # the old message still cannot bring the forgotten statement back
    api.post(f"/api/v1/conversations/{s1['id']}/reextract", {}, format="json")
    assert not Memory.objects.filter(status="active", content__contains="常去的健身房").exists()


def test_a_restatement_merged_into_the_forgotten_memory_while_it_waits_is_read_again(
        api, org, django_capture_on_commit_callbacks):
    """Said again word for word before the request executes, the statement became a source of the very
    memory being forgotten: that memory goes, the later message stays and is read again as a new act."""
    from memory.services.forget import forget_request_decide

    org.forget_requires_approval = True
    org.save()
    say(api, create_conversation(api, "s1"), f"我家住在{SECRET}。")
    fact = Memory.objects.exclude(kind="episode").get()
    request, _ = forget_by_query(api, "我的住址")
    say(api, create_conversation(api, "s2"), f"我家住在{SECRET}。")
    later = Message.objects.order_by("-id").first()
    assert set(fact.sources.values_list("message_id", flat=True)) >= {later.id}  # merged, not a second memory
    with django_capture_on_commit_callbacks(execute=True):
        forget_request_decide(request=ForgetRequest.objects.get(id=request["id"]), approve=True, operator="op1")
    assert Memory.objects.get(id=fact.id).status == "forgotten"
    assert SECRET in Message.objects.get(id=later.id).content  # not redacted: said after the request
    again = Memory.objects.filter(status="active", content__contains=SECRET).exclude(kind="episode").get()
    assert set(again.sources.values_list("message_id", flat=True)) == {later.id}
    assert AuditEvent.objects.filter(action="memory.restated_after_forget", target_id=str(again.id)).exists()
