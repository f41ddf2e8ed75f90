"""Tenant and user isolation under random interleavings (issue "Reliability and security", item 3).

A Hypothesis rule-based state machine drives 3 orgs × 3 users through the REST API: conversations,
appends, explicit memory writes, recall, context, forgets, conversation grants/revocations, entity
registrations and grants/revocations, API-key revocations. Every piece of planted text carries a
unique token (`zq` + 10 letters) and the model knows who wrote it, where, and what happened since.

Invariants, checked on every response:
- recall items, memory list/get and the memory/episode sections of a context only hold text the
  acting (org, user) wrote, that is not forgotten, whose source conversation the user can read now
  and whose linked entities the user may access now;
- recent messages and summaries of a context, message lists and conversation titles only hold
  text of conversations the user can read now (own and not revoked, or explicitly granted);
- the conversation list is exactly the readable set; entity resolution and entity lists only name
  entities of the caller's org the user may access; another org's ids are 404s;
- a revoked API key is refused (401) on its very next request.
After each run: every vector point's payload (org, user) matches its MySQL row, which is active;
every active memory has its point; cache hashes and keyword indexes of one user hold only that
user's memory ids; an org's entity matcher holds only that org's entities.

Bounded: ISOLATION_EXAMPLES (default 25) runs × ISOLATION_STEPS (default 30) steps, derandomized.
"""
import itertools
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import quote

import pytest
from django.conf import settings
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from memory.models import Memory
from memory.vectors import owner_key
from tenancy.models import ApiKey
from tenancy.services import api_key_revoke, org_get_or_create
from tests.conftest import make_client
from tests.security.helpers import Tokens

ISOLATION_EXAMPLES = int(os.environ.get("ISOLATION_EXAMPLES", "25"))
ISOLATION_STEPS = int(os.environ.get("ISOLATION_STEPS", "30"))

ORGS = ("a", "b", "c")
USERS = ("u1", "u2", "u3")
TOKEN_RE = re.compile(r"zq[a-z]{10}")

MESSAGE_TEMPLATES = [
    "我喜欢{t}风格的报告。", "我们农场在{t}。", "以后给我的维保建议请按{t}排序。",
    "I prefer {t} summaries from now on.", "Our main depot is in {t}.", "Remember that my dog is called {t}.",
]
MEMORY_TEMPLATES = ["User prefers {t} as the report format.", "用户的常用设备编号是{t}。", "The user's farm code is {t}."]
QUERY_WORDS = ["报告", "风格", "farm", "prefer", "设备", "dog"]


@dataclass
class Tok:
    org: str  # org slug (unique per run)
    user: str  # the writer
    kind: str  # message | title | memory | entity | rejected (never stored anywhere)
    conv: int | None = None
    memory_id: int | None = None
    linked: tuple = ()  # entity keys the text is linked to (mentions, explicit links)
    forgotten: bool = False


@dataclass
class Conv:
    id: int
    org: str
    owner: str
    access: dict = field(default_factory=dict)  # user -> "granted" | "revoked"
    tokens: set = field(default_factory=set)

    def readable(self, org: str, user: str) -> bool:
        if org != self.org:
            return False
        state = self.access.get(user)
        return state == "granted" or (user == self.owner and state != "revoked")


@dataclass
class Ent:
    key: tuple  # (org slug, type, external_id)
    id: int
    name: str
    token: str
    restricted: bool
    allow: set = field(default_factory=set)
    deny: set = field(default_factory=set)

    def visible(self, org: str, user: str) -> bool:
        return org == self.key[0] and user not in self.deny and (not self.restricted or user in self.allow)


# Every token planted by this test, across runs: a token of an earlier run belongs to other orgs.
REGISTRY: dict[str, Tok] = {}
# How much each check actually saw (a leak check that never sees any content proves nothing).
SEEN: Counter = Counter()
TOKENS = Tokens(seed=4242)
_RUNS = itertools.count(1)


class Isolation(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        run = next(_RUNS)
        self.orgs = {o: org_get_or_create(slug=f"iso-{run}-{o}") for o in ORGS}
        self.slug = {o: org.slug for o, org in self.orgs.items()}
        self.clients: dict[tuple[str, str], object] = {}
        self.convs: dict[int, Conv] = {}
        self.ents: dict[tuple, Ent] = {}
        # What this run planted, in order. Draws and preconditions read only this run's state, never
        # REGISTRY (which grows across runs): Hypothesis needs the same choices to draw the same way.
        self.planted: list[str] = []

    # ------------------------------------------------------------------ plumbing
    def client(self, o: str, u: str):
        if (o, u) not in self.clients:
            self.clients[(o, u)] = make_client(self.orgs[o], u)
        return self.clients[(o, u)]

    def plant(self, kind: str, o: str, u: str, **kw) -> str:
        token = TOKENS.new()
        REGISTRY[token] = Tok(org=self.slug[o], user=u, kind=kind, **kw)
        self.planted.append(token)
        return token

    def live_memory_tokens(self) -> list[str]:
        return [t for t in self.planted if REGISTRY[t].kind == "memory" and REGISTRY[t].memory_id
                and not REGISTRY[t].forgotten]

    def readable(self, conv_id: int, o: str, u: str) -> bool:
        return self.convs[conv_id].readable(self.slug[o], u)

    def entity_ok(self, key: tuple, o: str, u: str) -> bool:
        return self.ents[key].visible(self.slug[o], u)

    def recall_visible(self, token: str, o: str, u: str) -> bool:
        """May this token appear in a recalled item (or a context's memory/episode section) for (o, u)?"""
        tok = REGISTRY.get(token)
        if tok is not None and tok.kind == "entity":  # an entity's name, quoted by a message that mentioned it
            key = next((k for k, e in self.ents.items() if e.token == token), None)
            return key is not None and self.entity_ok(key, o, u)
        if tok is None or tok.org != self.slug[o] or tok.user != u or tok.forgotten:
            return False
        if tok.kind not in ("message", "memory"):
            return False
        if any(not self.entity_ok(key, o, u) for key in tok.linked):
            return False
        if tok.kind == "message" and not self.readable(tok.conv, o, u):
            return False  # every source must be readable (D5), so a merged memory hides it too
        return True

    def owned_memory_text(self, token: str, o: str, u: str) -> bool:
        """May this token appear in the user's own memory list / memory detail?"""
        tok = REGISTRY.get(token)
        if tok is not None and tok.kind == "entity":  # quoted by the user's own message; same org
            return tok.org == self.slug[o]
        return (tok is not None and tok.org == self.slug[o] and tok.user == u and not tok.forgotten
                and tok.kind in ("message", "memory"))

    def conv_text(self, token: str, conv_id: int) -> bool:
        """Text of that conversation's messages (including entity names they mention)."""
        tok = REGISTRY.get(token)
        return tok is not None and tok.kind in ("message", "entity") and token in self.convs[conv_id].tokens

    @staticmethod
    def tokens(value) -> set[str]:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return set(TOKEN_RE.findall(text))

    def expect(self, response, status: int, what: str):
        assert response.status_code == status, (what, response.status_code, response.content[:300])
        return response.json() if response.content else None

    def check(self, where: str, o: str, u: str, found: set[str], allowed) -> None:
        """Every token found in a response must be allowed for (o, u); counts what was seen."""
        SEEN[where] += len(found)
        bad = {t for t in found if not allowed(t)}
        assert not bad, f"{where} for ({self.slug[o]}, {u}) shows tokens it must not: " + \
            ", ".join(f"{t}={REGISTRY.get(t)}" for t in sorted(bad))

    def all_conv_ids(self) -> list[int]:
        return sorted(self.convs)

    def org_key(self, slug: str) -> str:
        return next(o for o, s in self.slug.items() if s == slug)

    def actor_for(self, data, conv_id: int) -> tuple[str, str, bool]:
        """Mostly a user who may read the conversation (so the deep paths run); one time in four
        anybody, from any org (so refusals are exercised). Returns (org, user, expected readable)."""
        readers = [(o, u) for o in ORGS for u in USERS if self.readable(conv_id, o, u)]
        stray = data.draw(st.integers(0, 3), label="stray") == 0
        if readers and not stray:
            o, u = data.draw(st.sampled_from(readers), label="reader")
        else:
            o, u = data.draw(st.sampled_from(ORGS), label="org"), data.draw(st.sampled_from(USERS), label="user")
        return o, u, self.readable(conv_id, o, u)

    def own_or_any_token(self, data, o: str, u: str) -> str:
        """Half the time a token the user wrote (recall should find it), else anybody's (it must not)."""
        mine = [t for t in self.planted if REGISTRY[t].org == self.slug[o] and REGISTRY[t].user == u
                and REGISTRY[t].kind in ("message", "memory")]
        anybody = [t for t in self.planted if REGISTRY[t].kind != "entity"] or ["zqnothingyet"]
        pool = mine if mine and data.draw(st.booleans(), label="own token") else anybody
        return data.draw(st.sampled_from(pool), label="query token")

    # ------------------------------------------------------------------ writes
    @initialize(owners=st.tuples(*[st.sampled_from(USERS)] * len(ORGS)), template=st.sampled_from(MESSAGE_TEMPLATES),
                restricted=st.booleans())
    def world(self, owners, template, restricted):
        """Every run starts with content: in each org a conversation with one message, and an entity."""
        for o, u in zip(ORGS, owners):
            self.create_conversation(o, u)
            conv_id = max(c.id for c in self.convs.values() if c.org == self.slug[o])
            token = self.plant("message", o, u, conv=conv_id)
            self.expect(self.client(o, u).post(f"/api/v1/conversations/{conv_id}/messages",
                                               {"role": "user", "content": template.format(t=token)}, format="json"),
                        201, "append")
            self.convs[conv_id].tokens.add(token)
        self.register_entity(ORGS[0], owners[0], restricted, {owners[0]})

    @rule(o=st.sampled_from(ORGS), u=st.sampled_from(USERS))
    def create_conversation(self, o, u):
        token = self.plant("title", o, u)
        body = self.expect(self.client(o, u).post("/api/v1/conversations", {"title": f"会话 {token}"}, format="json"),
                           201, "create conversation")
        self.convs[body["id"]] = Conv(id=body["id"], org=self.slug[o], owner=u, tokens={token})
        REGISTRY[token].conv = body["id"]

    @precondition(lambda self: self.convs)
    @rule(data=st.data(), template=st.sampled_from(MESSAGE_TEMPLATES), mention=st.booleans())
    def append(self, data, template, mention):
        conv_id = data.draw(st.sampled_from(self.all_conv_ids()), label="conversation")
        o, u, readable = self.actor_for(data, conv_id)
        linked, content_extra = (), ""
        same_org = [key for key in self.ents if key[0] == self.slug[o]]
        if mention and same_org:
            key = data.draw(st.sampled_from(same_org), label="mentioned entity")
            linked, content_extra = (key,), f" {self.ents[key].name}需要检查。"
        token = self.plant("message" if readable else "rejected", o, u, conv=conv_id if readable else None,
                           linked=linked)
        response = self.client(o, u).post(f"/api/v1/conversations/{conv_id}/messages",
                                          {"role": "user", "content": template.format(t=token) + content_extra},
                                          format="json")
        if readable:
            self.expect(response, 201, "append")
            self.convs[conv_id].tokens.add(token)
            self.convs[conv_id].tokens.update(self.ents[key].token for key in linked)
        else:  # another org's, another user's or a revoked conversation: refused, nothing stored
            self.expect(response, 404, "append to an unreadable conversation")

    # Appends are what everything else reads: twice the weight of other rules.
    append_again = append

    @precondition(lambda self: self.convs)
    @rule(data=st.data(), template=st.sampled_from(MESSAGE_TEMPLATES), guest=st.sampled_from(USERS))
    def share_and_append(self, data, template, guest):
        """The owner grants another user of the org, who then writes in the shared conversation."""
        conv_id = data.draw(st.sampled_from(self.all_conv_ids()), label="conversation")
        conv = self.convs[conv_id]
        o = self.org_key(conv.org)
        self.expect(self.client(o, conv.owner).post(f"/api/v1/conversations/{conv_id}/access/grant", {"user": guest},
                                                    format="json"), 204, "grant")
        conv.access[guest] = "granted"
        token = self.plant("message", o, guest, conv=conv_id)
        self.expect(self.client(o, guest).post(f"/api/v1/conversations/{conv_id}/messages",
                                               {"role": "user", "content": template.format(t=token)}, format="json"),
                    201, "guest append")
        conv.tokens.add(token)

    @rule(o=st.sampled_from(ORGS), u=st.sampled_from(USERS), data=st.data(),
          template=st.sampled_from(MEMORY_TEMPLATES), kind=st.sampled_from(["fact", "preference", "context"]),
          link=st.booleans())
    def write_memory(self, o, u, data, template, kind, link):
        body = {"kind": kind}
        linked = ()
        same_org = [key for key in self.ents if key[0] == self.slug[o]]
        if link and same_org:
            key = data.draw(st.sampled_from(same_org), label="linked entity")
            linked, body["entities"] = (key,), [f"{key[1]}:{key[2]}"]
        token = self.plant("memory", o, u, linked=linked)
        body["content"] = template.format(t=token)
        response = self.client(o, u).post("/api/v1/memories", body, format="json")
        assert response.status_code in (200, 201), response.content[:300]
        result = response.json()
        if result["action"] in ("added", "superseded"):
            REGISTRY[token].memory_id = result["memory"]["id"]
        else:  # duplicate / blocked: this text was stored nowhere
            REGISTRY[token].kind = "rejected"

    @precondition(lambda self: self.live_memory_tokens())
    @rule(data=st.data(), cross=st.integers(0, 3), other_user=st.sampled_from(USERS))
    def forget(self, data, cross, other_user):
        token = data.draw(st.sampled_from(self.live_memory_tokens()), label="memory to forget")
        tok = REGISTRY[token]
        o = self.org_key(tok.org)
        if cross == 0 and other_user != tok.user:  # someone else may not forget it (nor learn it exists)
            self.expect(self.client(o, other_user).post("/api/v1/forget", {"memory_ids": [tok.memory_id]},
                                                        format="json"), 400, "forget another user's memory")
            return
        self.expect(self.client(o, tok.user).post("/api/v1/forget", {"memory_ids": [tok.memory_id]}, format="json"),
                    201, "forget")
        tok.forgotten = True

    @precondition(lambda self: self.convs)
    @rule(whom=st.sampled_from(USERS), grant=st.booleans(), stray=st.integers(0, 3), data=st.data())
    def conversation_access(self, whom, grant, stray, data):
        conv_id = data.draw(st.sampled_from(self.all_conv_ids()), label="conversation")
        conv = self.convs[conv_id]
        if stray == 0:  # one time in four anybody (refused unless it happens to be the owner)
            o, u = data.draw(st.sampled_from(ORGS), label="org"), data.draw(st.sampled_from(USERS), label="user")
        else:
            o, u = self.org_key(conv.org), conv.owner
        action = "grant" if grant else "revoke"
        response = self.client(o, u).post(f"/api/v1/conversations/{conv_id}/access/{action}", {"user": whom},
                                          format="json")
        if conv.org == self.slug[o] and conv.owner == u:
            self.expect(response, 204, f"owner {action}")
            conv.access[whom] = "granted" if grant else "revoked"
            self.after_access_change(o, whom, conv_id)
        else:
            self.expect(response, 404, f"non-owner {action}")

    def after_access_change(self, o: str, whom: str, conv_id: int) -> None:
        """Check the affected user's view at once: their conversation list, and recall of what they
        wrote in that conversation (revocation hides it immediately, a grant never shows others' memories)."""
        self.check_conversations(o, whom)
        written = [t for t in self.planted if REGISTRY[t].conv == conv_id and REGISTRY[t].kind == "message"
                   and REGISTRY[t].user == whom]
        for token in written[-2:]:
            self.check_recall(o, whom, token)

    @rule(o=st.sampled_from(ORGS), u=st.sampled_from(USERS), restricted=st.booleans(),
          grants=st.sets(st.sampled_from(USERS)))
    def register_entity(self, o, u, restricted, grants):
        token = self.plant("entity", o, u)
        body = {"type": "asset", "external_id": f"E-{token}", "name": f"设备{token}"}
        if restricted:
            body["grants"] = sorted(grants)
        result = self.expect(self.client(o, u).post("/api/v1/entities", body, format="json"), 201, "register entity")
        key = (self.slug[o], "asset", f"E-{token}")
        self.ents[key] = Ent(key=key, id=result["id"], name=body["name"], token=token, restricted=restricted,
                             allow=set(grants) if restricted else set())

    @precondition(lambda self: self.ents)
    @rule(u=st.sampled_from(USERS), whom=st.sampled_from(USERS), grant=st.booleans(), stray=st.integers(0, 3),
          data=st.data())
    def entity_access(self, u, whom, grant, stray, data):
        key = data.draw(st.sampled_from(list(self.ents)), label="entity")
        ent = self.ents[key]
        # Mostly a user of the entity's org; one time in four any org (refused for another org).
        o = data.draw(st.sampled_from(ORGS), label="org") if stray == 0 else self.org_key(key[0])
        action = "grant" if grant else "revoke"
        response = self.client(o, u).post(f"/api/v1/entities/{key[1]}/{key[2]}/access/{action}", {"user": whom},
                                          format="json")
        if key[0] != self.slug[o]:
            self.expect(response, 404, f"{action} another org's entity")
            return
        self.expect(response, 204, f"entity {action}")  # any key of the org manages the registry (by design)
        if grant:
            if ent.restricted:
                ent.allow.add(whom)
            else:
                ent.deny.discard(whom)
        elif ent.restricted:
            ent.allow.discard(whom)
            ent.deny.discard(whom)
        else:
            ent.deny.add(whom)
            ent.allow.discard(whom)
        self.check_entities(o, whom)
        self.check_resolution(o, whom, key)
        linked = [t for t in self.planted if key in REGISTRY[t].linked and REGISTRY[t].user == whom]
        for token in linked[-2:]:
            self.check_recall(o, whom, token)

    @rule(o=st.sampled_from(ORGS), u=st.sampled_from(USERS))
    def revoke_api_key(self, o, u):
        client = self.client(o, u)
        key = ApiKey.objects.get(prefix=client.raw_key.split("_")[1])
        api_key_revoke(key=key, actor="security-test")
        self.expect(client.get("/api/v1/conversations"), 401, "revoked key, next request")
        self.expect(client.post("/api/v1/recall", {"query": "anything"}, format="json"), 401, "revoked key, recall")
        del self.clients[(o, u)]  # the agent service gets a new key

    # ------------------------------------------------------------------ reads
    @rule(o=st.sampled_from(ORGS), u=st.sampled_from(USERS), data=st.data(), word=st.sampled_from(QUERY_WORDS))
    def recall(self, o, u, data, word):
        self.check_recall(o, u, self.own_or_any_token(data, o, u), word)

    def check_recall(self, o: str, u: str, token: str, word: str = "") -> None:
        body = self.expect(self.client(o, u).post("/api/v1/recall", {"query": f"{token} {word}".strip(), "k": 10,
                                                                      "include_episodes": True}, format="json"),
                           200, "recall")
        for item in body["items"]:
            self.check("recall", o, u, self.tokens(item), lambda t: self.recall_visible(t, o, u))
            for source in item["sources"]:  # never another org's conversation
                if source["conversation_id"] is not None:
                    conv = self.convs.get(source["conversation_id"])
                    assert conv is not None and conv.org == self.slug[o], (item, source)

    @precondition(lambda self: self.convs)
    @rule(data=st.data())
    def context(self, data):
        conv_id = data.draw(st.sampled_from(self.all_conv_ids()), label="conversation")
        o, u, readable = self.actor_for(data, conv_id)
        token = self.own_or_any_token(data, o, u)
        response = self.client(o, u).post(f"/api/v1/conversations/{conv_id}/context",
                                          {"message": f"{token} 怎么样", "budget": 3000}, format="json")
        if not readable:
            self.expect(response, 404, "context of an unreadable conversation")
            return
        body = self.expect(response, 200, "context")
        sections = {s["name"]: s for s in body["sections"]}
        for name in ("memories", "episodes"):
            self.check(f"context {name}", o, u, self.tokens(sections[name]["text"]),
                       lambda t: self.recall_visible(t, o, u))
        window = [m for m in body["messages"][:-1] if m["role"] != "system"]
        for where, value in (("summary", sections["summary"]["text"]), ("task_state", sections["task_state"]["text"]),
                             ("recent", window)):
            self.check(f"context {where}", o, u, self.tokens(value), lambda t: self.conv_text(t, conv_id))
        texts = {s["text"] for s in body["sections"]}
        assert all(m["content"] in texts for m in body["messages"] if m["role"] == "system"), body["messages"]

    @rule(o=st.sampled_from(ORGS), u=st.sampled_from(USERS))
    def list_memories(self, o, u):
        body = self.expect(self.client(o, u).get("/api/v1/memories?include_episodes=true&limit=200"), 200, "memories")
        self.check("memory list", o, u, self.tokens(body), lambda t: self.owned_memory_text(t, o, u))

    @precondition(lambda self: any(REGISTRY[t].memory_id for t in self.planted))
    @rule(o=st.sampled_from(ORGS), u=st.sampled_from(USERS), data=st.data())
    def get_memory(self, o, u, data):
        token = data.draw(st.sampled_from([t for t in self.planted if REGISTRY[t].memory_id]), label="memory")
        tok = REGISTRY[token]
        response = self.client(o, u).get(f"/api/v1/memories/{tok.memory_id}")
        if tok.org == self.slug[o] and tok.user == u:
            body = self.expect(response, 200, "own memory")
            self.check("memory detail", o, u, self.tokens(body), lambda t: self.owned_memory_text(t, o, u))
        else:
            self.expect(response, 404, "another user's or org's memory")
            unknown = self.client(o, u).get("/api/v1/memories/999999999")
            assert response.content == unknown.content, "a foreign memory's 404 differs from an unknown id's"


    @rule(o=st.sampled_from(ORGS), u=st.sampled_from(USERS))
    def list_conversations(self, o, u):
        self.check_conversations(o, u)

    def check_conversations(self, o: str, u: str) -> None:
        body = self.expect(self.client(o, u).get("/api/v1/conversations?limit=200"), 200, "conversations")
        listed = {c["id"] for c in body["results"]}
        expected = {c.id for c in self.convs.values() if c.readable(self.slug[o], u)}
        assert listed == expected, (self.slug[o], u, listed, expected)
        for item in body["results"]:
            self.check("conversation list", o, u, self.tokens(item), lambda t: t in self.convs[item["id"]].tokens)

    @precondition(lambda self: self.convs)
    @rule(data=st.data())
    def list_messages(self, data):
        conv_id = data.draw(st.sampled_from(self.all_conv_ids()), label="conversation")
        o, u, readable = self.actor_for(data, conv_id)
        response = self.client(o, u).get(f"/api/v1/conversations/{conv_id}/messages?limit=200")
        if not readable:
            self.expect(response, 404, "messages of an unreadable conversation")
            return
        body = self.expect(response, 200, "messages")
        self.check("message list", o, u, self.tokens(body), lambda t: self.conv_text(t, conv_id))

    @precondition(lambda self: self.ents)
    @rule(data=st.data(), stray=st.integers(0, 3), u=st.sampled_from(USERS))
    def resolve_entity(self, data, stray, u):
        key = data.draw(st.sampled_from(list(self.ents)), label="entity named")
        # Mostly a user of the entity's org; one time in four any org (which must resolve nothing).
        o = data.draw(st.sampled_from(ORGS), label="org") if stray == 0 else self.org_key(key[0])
        self.check_resolution(o, u, key)

    def check_resolution(self, o: str, u: str, key: tuple) -> None:
        ent = self.ents[key]
        body = self.expect(self.client(o, u).post("/api/v1/entities/resolve", {"text": f"{ent.name}怎么样了"},
                                                  format="json"), 200, "resolve")
        named = [body["entity"]] if body["entity"] else []
        for found in named + body["candidates"]:
            found_key = (self.slug[o], found["type"], found["external_id"])
            assert found_key in self.ents and self.entity_ok(found_key, o, u), (self.slug[o], u, found)
        visible_ids = {e.id for e in self.ents.values() if e.visible(self.slug[o], u)}
        for step in body["evidence"]:
            assert set(step.get("entity_ids", [])) <= visible_ids, (self.slug[o], u, step)
        allowed_tokens = {e.token for e in self.ents.values() if e.visible(self.slug[o], u)}
        self.check("entity resolution", o, u, self.tokens(body), lambda t: t in allowed_tokens)
        if self.entity_ok(key, o, u):
            assert body["status"] == "resolved" and body["entity"]["external_id"] == key[2], body

    @rule(o=st.sampled_from(ORGS), u=st.sampled_from(USERS))
    def list_entities(self, o, u):
        self.check_entities(o, u)

    def check_entities(self, o: str, u: str) -> None:
        body = self.expect(self.client(o, u).get("/api/v1/entities?limit=200"), 200, "entities")
        listed = {e["id"] for e in body["results"]}
        expected = {e.id for e in self.ents.values() if e.visible(self.slug[o], u)}
        assert listed == expected, (self.slug[o], u, listed, expected)

    @rule(o=st.sampled_from(ORGS), u=st.sampled_from(USERS))
    def prime_cache(self, o, u):
        """Fill the user's active-memory hash the way the read path does, so later writes update it."""
        from memory import cache as memory_cache_module

        fill = getattr(memory_cache_module, "standing_memories", None)
        if fill is not None:
            fill(self.orgs[o].id, u)
        else:
            rows = list(Memory.objects.filter(org=self.orgs[o], user_id=u, status="active").exclude(kind="episode"))
            memory_cache_module.memory_cache.fill(self.orgs[o].id, u, rows)

    # ------------------------------------------------------------------ projections and caches
    def teardown(self):
        check_vector_payloads()
        check_caches()


def check_vector_payloads() -> None:
    """Every point is an active memory whose org/user match its MySQL row; every active memory has one."""
    from memory.vector_index import get_vector_index

    index = get_vector_index()
    points = {}
    for name in index.collections():
        for point_id, payload in index.scroll(collection=name):
            points[point_id] = payload
    rows = {m.id: m for m in Memory.objects.filter(id__in=points)}
    SEEN["vector points"] += len(points)
    for point_id, payload in points.items():
        memory = rows.get(point_id)
        assert memory is not None, f"orphan vector point {point_id}: {payload}"
        assert (payload["org"], payload["user_id"]) == (str(memory.org_id), memory.user_id), (point_id, payload)
        assert payload["owner"] == owner_key(memory.org_id, memory.user_id), (point_id, payload)
        assert memory.status == "active", f"point {point_id} kept for a {memory.status} memory"
    active = set(Memory.objects.filter(status="active", org__slug__startswith="iso-").values_list("id", flat=True))
    assert active <= set(points), f"active memories without a vector point: {sorted(active - set(points))[:20]}"
    # The payload filters recall relies on: a search scoped to one (org, user) returns only their points.
    import numpy as np

    from memory.vectors import active_collection_row, user_filters

    live = active_collection_row()
    rng = np.random.default_rng(7)
    for org, user in sorted({(p["org"], p["user_id"]) for p in points.values()})[-12:]:
        vector = rng.normal(size=live.dim).astype(np.float32)
        hits = index.search(vector / np.linalg.norm(vector), filters=user_filters(live, int(org), user),
                            limit=100, collection=live.name)
        SEEN["filtered search hits"] += len(hits)
        for hit in hits:
            memory = rows[hit.point_id]
            assert (str(memory.org_id), memory.user_id) == (org, user), (org, user, hit.point_id, hit.payload)


def check_caches() -> None:
    from memory.cache import memory_cache
    from memory.recall import snapshot_cache

    owners = {}
    # The per-user active-memory hashes (Redis hash, or the same shape in the local-memory cache), of
    # this test's orgs only (another test session may share the Redis database).
    from tenancy.models import Org

    ours = set(Org.objects.filter(slug__startswith="iso-").values_list("id", flat=True))
    for org_id, user_id in sorted(o for o in _cache_hash_owners() if o[0] in ours):
        hashed = memory_cache.get_all(org_id, user_id) or {}
        SEEN["cache hash entries"] += len(hashed)
        for memory_id, payload in hashed.items():
            owners.setdefault(memory_id, Memory.objects.filter(id=memory_id).values_list("org_id", "user_id",
                                                                                        "status").first())
            row = owners[memory_id]
            assert row is not None and row[:2] == (org_id, user_id), (org_id, user_id, memory_id, row)
            assert row[2] == "active", f"cache hash of ({org_id}, {user_id}) still holds {row[2]} memory {memory_id}"
    # The in-process recall snapshots with their keyword (BM25) indexes, one per (org, user); only those
    # current enough to be served.
    from memory.cache import user_generation

    for (org_id, user_id), index in list(snapshot_cache._cache().items()):
        if index.generation != user_generation(org_id, user_id):
            continue
        ids = [int(i) for i in index.ids]
        SEEN["keyword index entries"] += len(ids)
        wrong = Memory.objects.filter(id__in=ids).exclude(org_id=org_id, user_id=user_id).values_list("id", flat=True)
        assert not list(wrong), f"keyword index of ({org_id}, {user_id}) holds other users' memories {list(wrong)}"
    # The per-org entity matchers.
    from entities import selectors as entity_selectors
    from entities.models import Entity

    for org_id, (version, matcher) in list(getattr(entity_selectors, "_matchers", {}).items()):
        if matcher is None or version != entity_selectors.registry_generation(org_id):
            continue  # stale: never served again (the registry generation moved on)
        foreign = Entity.objects.filter(id__in=list(matcher.refs)).exclude(org_id=org_id).values_list("id", flat=True)
        assert not list(foreign), f"entity matcher of org {org_id} holds other orgs' entities {list(foreign)}"


def _cache_hash_owners() -> set[tuple[int, str]]:
    """(org id, user id) of every mem:active:{org}:{user}[#epoch] key present in the configured cache."""
    pattern = re.compile(r"mem:active:(\d+):([^#]+)(?:#\d+)?$")
    keys: list[str] = []
    if settings.CACHES["default"]["BACKEND"].endswith("RedisCache"):
        from django_redis import get_redis_connection

        redis = get_redis_connection("default")
        keys = [k.decode() if isinstance(k, bytes) else k for k in redis.scan_iter("*mem:active:*")]
    else:
        from django.core.cache import cache

        keys = list(getattr(cache, "_cache", {}).keys())
    found = set()
    for key in keys:
        match = pattern.search(key)
        if match:
            found.add((int(match.group(1)), match.group(2)))
    return found


@pytest.fixture
def fresh_vector_index(settings, tmp_path):
    """A vector index of this test's own: every point in it comes from this test's rows."""
    from memory.models import VectorCollection
    from memory.vector_index import reset_vector_index

    settings.VECTOR_INDEX_PATH = str(tmp_path / "qdrant")
    reset_vector_index()
    VectorCollection.forget_cached_live()
    yield
    reset_vector_index()
    VectorCollection.forget_cached_live()


@pytest.mark.django_db
def test_isolation_property(fresh_vector_index):
    run_state_machine_as_test(Isolation, settings=hsettings(
        max_examples=ISOLATION_EXAMPLES, stateful_step_count=ISOLATION_STEPS, deadline=None, derandomize=True,
        database=None, print_blob=False, suppress_health_check=list(HealthCheck)))
    print("tokens planted:", len(REGISTRY), "tokens seen per check:", dict(SEEN))
    # The checks saw real content, so a leak would have been visible.
    for where in ("recall", "context memories", "context recent", "memory list", "message list", "conversation list",
                  "entity resolution", "vector points", "filtered search hits", "cache hash entries",
                  "keyword index entries"):
        assert SEEN[where] > 0, f"{where}: no content was ever seen ({dict(SEEN)})"


# --------------------------------------------------------------------------- deterministic cases
def _ok(response, status=None):
    assert response.status_code < 300 if status is None else response.status_code == status, \
        (response.status_code, response.content[:300])
    return response.json() if response.content else None


@pytest.mark.django_db
def test_foreign_ids_answer_exactly_like_unknown_ids(org, other_org):
    """404, byte for byte the same as for an id that does not exist: existence is never revealed."""
    owner, stranger = make_client(org, "u1"), make_client(other_org, "u1")
    conv = _ok(owner.post("/api/v1/conversations", {"title": "t"}, format="json"))
    [message] = _ok(owner.post(f"/api/v1/conversations/{conv['id']}/messages/batch",
                               {"messages": [{"role": "user", "content": "I prefer tea."}]}, format="json"))
    _ok(owner.put(f"/api/v1/conversations/{conv['id']}/tasks/plan", {"state": "draft"}, format="json"))
    memory = _ok(owner.post("/api/v1/memories", {"kind": "fact", "content": "The farm has two barns."},
                            format="json"))["memory"]
    doomed = _ok(owner.post("/api/v1/memories", {"kind": "fact", "content": "Old plough sold."}, format="json"))
    forget = _ok(owner.post("/api/v1/forget", {"memory_ids": [doomed["memory"]["id"]]}, format="json"))
    _ok(owner.post("/api/v1/entities", {"type": "asset", "external_id": "A-1", "name": "收割机一号"}, format="json"))
    unknown = 10 ** 9
    pairs = [
        (f"/api/v1/conversations/{conv['id']}", f"/api/v1/conversations/{unknown}"),
        (f"/api/v1/conversations/{conv['id']}/messages", f"/api/v1/conversations/{unknown}/messages"),
        (f"/api/v1/conversations/{conv['id']}/messages/{message['id']}", f"/api/v1/conversations/{unknown}/messages/1"),
        (f"/api/v1/conversations/{conv['id']}/tasks/plan", f"/api/v1/conversations/{unknown}/tasks/plan"),
        (f"/api/v1/memories/{memory['id']}", f"/api/v1/memories/{unknown}"),
        (f"/api/v1/memories/{memory['id']}/history", f"/api/v1/memories/{unknown}/history"),
        (f"/api/v1/forget/{forget['id']}", f"/api/v1/forget/{unknown}"),
        ("/api/v1/entities/asset/A-1", "/api/v1/entities/asset/A-unknown"),
    ]
    for foreign, missing in pairs:
        a, b = stranger.get(foreign), stranger.get(missing)
        assert (a.status_code, a.content) == (b.status_code, b.content) and a.status_code == 404, (foreign, a.content)
    # Writes too: another org cannot append, grant itself access, recall by conversation or source a memory.
    posts = [
        (f"/api/v1/conversations/{conv['id']}/messages", {"role": "user", "content": "hi"}, 404),
        (f"/api/v1/conversations/{conv['id']}/access/grant", {"user": "u1"}, 404),
        (f"/api/v1/conversations/{conv['id']}/context", {"message": "hi"}, 404),
        (f"/api/v1/memories/{memory['id']}/invalidate", {}, 404),
        ("/api/v1/recall", {"query": "barns", "conversation_id": conv["id"]}, 400),
        ("/api/v1/memories", {"kind": "fact", "content": "x", "sources": [{"message_id": message["id"]}]}, 400),
        ("/api/v1/forget", {"memory_ids": [memory["id"]]}, 400),
        ("/api/v1/entities/asset/A-1/access/grant", {"user": "u1"}, 404),
    ]
    for path, body, status in posts:
        assert stranger.post(path, body, format="json").status_code == status, path
    assert stranger.patch(f"/api/v1/memories/{memory['id']}", {"content": "pwned"}, format="json").status_code == 404
    assert _ok(owner.get(f"/api/v1/memories/{memory['id']}"))["content"] == "The farm has two barns."


@pytest.fixture
def granted_then_revoked(org):
    """u1 owns a conversation, grants u2, u2 says something memorable there, then u1 revokes u2."""
    u1, u2 = make_client(org, "u1"), make_client(org, "u2")
    conv = _ok(u1.post("/api/v1/conversations", {"title": "shared"}, format="json"))
    _ok(u1.post(f"/api/v1/conversations/{conv['id']}/access/grant", {"user": "u2"}, format="json"), 204)
    _ok(u2.post(f"/api/v1/conversations/{conv['id']}/messages",
                {"role": "user", "content": "我喜欢zqrevokedtxt风格的报告。"}, format="json"), 201)
    derived = [m for m in _ok(u2.get("/api/v1/memories?include_episodes=true"))["results"]
               if "zqrevokedtxt" in m["content"]]
    assert derived, "nothing was derived from the message"
    _ok(u1.post(f"/api/v1/conversations/{conv['id']}/access/revoke", {"user": "u2"}, format="json"), 204)
    assert _ok(u2.post("/api/v1/recall", {"query": "zqrevokedtxt 报告"}, format="json"))["items"] == []
    return u2, derived


@pytest.mark.django_db
def test_memory_list_and_detail_hide_what_a_revoked_source_derived(granted_then_revoked):
    u2, derived = granted_then_revoked
    listed = _ok(u2.get("/api/v1/memories?include_episodes=true"))["results"]
    assert not [m for m in listed if "zqrevokedtxt" in m["content"]], listed
    for memory in derived:
        assert u2.get(f"/api/v1/memories/{memory['id']}").status_code == 404


@pytest.mark.django_db
def test_memory_list_hides_memories_linked_to_a_revoked_entity(org):
    api = make_client(org, "u1")
    _ok(api.post("/api/v1/entities", {"type": "asset", "external_id": "A-7", "name": "七号拖拉机"}, format="json"))
    _ok(api.post("/api/v1/memories", {"kind": "fact", "content": "The zqtractorsev tractor leaks oil.",
                                      "entities": ["asset:A-7"]}, format="json"))
    _ok(api.post("/api/v1/entities/asset/A-7/access/revoke", {"user": "u1"}, format="json"), 204)
    assert _ok(api.post("/api/v1/recall", {"query": "zqtractorsev tractor"}, format="json"))["items"] == []
    listed = _ok(api.get("/api/v1/memories"))["results"]
    assert not [m for m in listed if "zqtractorsev" in m["content"]], listed


@pytest.mark.django_db
def test_recall_hides_merged_memory_when_one_source_is_revoked(org):
    """The same statement in two conversations is one memory with two sources (the restatement is merged
    into it); revoking either conversation hides it, while what only the other conversation said stays."""
    api = make_client(org, "u1")
    first = _ok(api.post("/api/v1/conversations", {"title": "one"}, format="json"))
    second = _ok(api.post("/api/v1/conversations", {"title": "two"}, format="json"))
    statement = "我喜欢zqmergedtxt风格的报告。"
    for conv in (first, second):
        _ok(api.post(f"/api/v1/conversations/{conv['id']}/messages", {"role": "user", "content": statement},
                     format="json"))
    _ok(api.post(f"/api/v1/conversations/{second['id']}/messages",
                 {"role": "user", "content": "我们农场有一台zqcontroltxt牌拖拉机。"}, format="json"))

    def standing(query):
        items = _ok(api.post("/api/v1/recall", {"query": query}, format="json"))["items"]
        return [i for i in items if i["kind"] != "episode"]

    # The state the name promises: one memory, merged from both conversations, recalled.
    [merged] = [i for i in standing("我喜欢什么风格的报告") if "zqmergedtxt" in i["content"]]
    assert {s["conversation_id"] for s in merged["sources"]} == {first["id"], second["id"]}, merged
    assert [m["id"] for m in _ok(api.get("/api/v1/memories"))["results"] if "zqmergedtxt" in m["content"]] == [merged["id"]]

    _ok(api.post(f"/api/v1/conversations/{first['id']}/access/revoke", {"user": "u1"}, format="json"), 204)
    items = _ok(api.post("/api/v1/recall", {"query": "我喜欢什么风格的报告", "include_episodes": True}, format="json"))["items"]
    # The merged memory is gone; the second conversation's own message may still be quoted as an episode.
    assert not [i for i in items if "zqmergedtxt" in i["content"] and i["kind"] != "episode"], items
    assert all(s["conversation_id"] != first["id"] for i in items for s in i["sources"]), items
    assert api.get(f"/api/v1/memories/{merged['id']}").status_code == 404
    # Positive control: what only the still-readable conversation said is recalled as before.
    assert [i for i in standing("zqcontroltxt 拖拉机") if "zqcontroltxt" in i["content"]]


@pytest.mark.django_db
def test_deactivated_restricted_entity_stays_hidden(org):
    owner, other = make_client(org, "u1"), make_client(org, "u2")
    _ok(owner.post("/api/v1/entities", {"type": "asset", "external_id": "S-1", "name": "保密设备",
                                        "attributes": {"site": "secret"}, "grants": ["u1"]}, format="json"))
    assert other.get("/api/v1/entities/asset/S-1").status_code == 404
    _ok(owner.post("/api/v1/entities/asset/S-1/deactivate"))
    assert other.get("/api/v1/entities/asset/S-1").status_code == 404


@pytest.mark.django_db
def test_entity_with_a_slash_in_its_id_can_be_revoked(org):
    api = make_client(org, "u1")
    _ok(api.post("/api/v1/entities", {"type": "workorder", "external_id": "WO/2024/7", "name": "工单七"},
                 format="json"))
    path = f"/api/v1/entities/workorder/{quote('WO/2024/7', safe='')}"
    other = make_client(org, "u2")
    assert other.get(path).status_code == 200  # no grants: every user of the org may read it
    response = api.post(f"{path}/access/revoke", {"user": "u2"}, format="json")
    assert response.status_code == 204, (response.status_code, response["Content-Type"])
    assert other.get(path).status_code == 404  # u2 has lost it
    assert api.get(path).status_code == 200  # and only u2
