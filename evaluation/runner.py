"""Replays scenario files (FORMAT.md) through the public REST API and scores every probe.

Each case runs in a fresh org (`<org>-<run>-<case>`); setup of orgs and API keys goes through the
services (as an operator would), everything else through the API with the in-process client.
"""
import json
import re
import time
import uuid
from dataclasses import dataclass, field

from rest_framework.test import APIClient

from evaluation import checks
from evaluation.schema import ScenarioFormatError, validate_case
from tenancy.services import api_key_create, org_get_or_create


class Unsupported(Exception):
    pass


class StepFailed(Exception):
    pass


@dataclass
class ProbeResult:
    label: str
    passed: bool
    failures: list[str]
    expect_total: int = 0
    expect_hit: int = 0
    has_forbid: bool = False
    forbid_violated: bool = False
    has_erased: bool = False
    erased_violated: bool = False
    entity_expected: bool = False
    entity_ok: bool = False
    source_gold: list[str] = field(default_factory=list)
    ranked_refs: list[list[str]] = field(default_factory=list)  # refs of each recalled item, in rank order
    k: int = 5
    context_tokens: int | None = None
    recall_ms: float | None = None
    context_ms: float | None = None


@dataclass
class CaseResult:
    id: str
    passed: bool
    probes: list[ProbeResult]
    error: str | None = None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:100]


class CaseRunner:
    def __init__(self, case: dict, *, run_id: str, k_override: int | None, baseline: str | None,
                 source_ks: tuple[int, ...] = ()):
        self.case = case
        self.run_id = run_id
        self.k_override = k_override
        self.baseline = baseline
        self.source_ks = source_ks
        self.clients: dict[tuple[str, str], APIClient] = {}
        self.conversations: dict[tuple[str, str], tuple[int, str]] = {}  # (org, session) -> (id, owner)
        self.labels: dict[str, int] = {}
        self.unsupported: list[str] = []

    # ------------------------------------------------------------------ plumbing
    def _org_slug(self, org: str) -> str:
        return _slug(f"{org}-{self.run_id}-{self.case['id']}")

    def client(self, org: str, user: str) -> APIClient:
        key = (org, user)
        if key not in self.clients:
            org_obj = org_get_or_create(slug=self._org_slug(org))
            _, raw = api_key_create(org=org_obj, name=f"eval-{user}")
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}", HTTP_X_MEMORY_USER=user)
            self.clients[key] = client
        return self.clients[key]

    def call(self, client: APIClient, method: str, path: str, body=None, op: str = "") -> dict | list | None:
        response = getattr(client, method)(path, body, format="json") if body is not None else getattr(client, method)(path)
        is_json = response.get("Content-Type", "").startswith("application/json")
        if response.status_code in (404, 405) and (not is_json or response.status_code == 405):
            raise Unsupported(op or path)
        if response.status_code >= 400:
            detail = response.content.decode(errors="replace")[:300]
            raise StepFailed(f"{op or path}: HTTP {response.status_code} {detail}")
        return response.json() if is_json and response.content else None

    def conversation(self, org: str, user: str, session: str) -> int:
        key = (org, session)
        if key not in self.conversations:
            body = self.call(self.client(org, user), "post", "/api/v1/conversations", {"external_id": session}, "conversation")
            self.conversations[key] = (body["id"], user)
        return self.conversations[key][0]

    # ------------------------------------------------------------------ steps
    def setup_entities(self) -> None:
        entities = self.case.get("entities") or []
        if not entities:
            return
        org, user = self.case["org"], self.case["user"]
        payload = [{"type": e["type"], "external_id": e["id"], "name": e["name"], "aliases": e.get("aliases", []),
                    "attributes": e.get("attributes", {}), **({"grants": e["grants"]} if "grants" in e else {})}
                   for e in entities]
        self.call(self.client(org, user), "post", "/api/v1/entities/bulk", {"entities": payload}, "entities")
        # Relations name their target by the case's entity id; the type comes from that entity.
        types = {}
        for e in entities:
            types.setdefault(e["id"], set()).add(e["type"])
        relations = []
        for e in entities:
            for r in e.get("relations") or []:
                target_types = types.get(r["to"], set())
                if len(target_types) != 1:
                    raise ValueError(f"relation of {e['id']!r} names {r['to']!r}, which is not exactly one entity of the case")
                relations.append({"from": {"type": e["type"], "external_id": e["id"]}, "type": r["type"],
                                  "to": {"type": next(iter(target_types)), "external_id": r["to"]},
                                  **{k: r[k] for k in ("valid_from", "valid_to", "source") if k in r}})
        if relations:
            self.call(self.client(org, user), "post", "/api/v1/relations/bulk", {"relations": relations}, "relations")

    def _flush_messages(self, pending: list[dict]) -> None:
        if not pending:
            return
        first = pending[0]
        org, user = first.get("org", self.case["org"]), first.get("user", self.case["user"])
        conversation_id = self.conversation(org, user, first["session"])
        messages = []
        for step in pending:
            message = {"role": step["role"], "content": step.get("content", ""), "occurred_at": step["at"]}
            for src, dst in (("ref", "external_ref"), ("tool_call_id", "tool_call_id"), ("tool_calls", "tool_calls")):
                if step.get(src) is not None:
                    message[dst] = step[src]
            messages.append(message)
        for start in range(0, len(messages), 200):
            self.call(self.client(org, user), "post", f"/api/v1/conversations/{conversation_id}/messages/batch",
                      {"messages": messages[start:start + 200]}, "message")
        pending.clear()

    def step(self, step: dict) -> None:
        op = step["op"]
        org, user = step.get("org", self.case["org"]), step.get("user", self.case["user"])
        client = self.client(org, user)
        if op == "memory":
            body = {"kind": step["kind"], "content": step["content"], "at": step.get("at")}
            for src, dst in (("key", "key"), ("entities", "entities"), ("assertion", "assertion")):
                if step.get(src) is not None:
                    body[dst] = step[src]
            result = self.call(client, "post", "/api/v1/memories", body, "memory")
            if result and result.get("memory"):
                self.labels[step["label"]] = result["memory"]["id"]
        elif op == "forget":
            if "label" in step:
                if step["label"] not in self.labels:
                    raise StepFailed(f"forget: unknown label {step['label']!r}")
                self.call(client, "post", "/api/v1/forget", {"memory_ids": [self.labels[step["label"]]]}, "forget")
            else:
                preview = self.call(client, "post", "/api/v1/forget/preview", {"query": step["query"]}, "forget")
                ids = [m["id"] for m in preview["matches"]]
                if ids:  # nothing matched: there is nothing to forget
                    self.call(client, "post", "/api/v1/forget", {"query": step["query"], "memory_ids": ids}, "forget")
        elif op == "reextract":
            conversation_id = self.conversation(org, user, step["session"])
            self.call(client, "post", f"/api/v1/conversations/{conversation_id}/reextract", {}, "reextract")
        elif op in ("revoke_session", "grant_session"):
            conversation_id = self.conversation(org, user, step["session"])
            owner = self.conversations[(org, step["session"])][1]
            action = "revoke" if op == "revoke_session" else "grant"
            self.call(self.client(org, owner), "post", f"/api/v1/conversations/{conversation_id}/access/{action}",
                      {"user": user}, op)
        elif op in ("revoke_entity", "grant_entity"):
            entity = self._entity_ref(step["entity"])
            action = "revoke" if op == "revoke_entity" else "grant"
            self.call(self.client(org, self.case["user"]), "post", f"/api/v1/entities/{entity}/access/{action}",
                      {"user": user}, op)
        elif op == "task":
            conversation_id = self.conversation(org, user, step["session"])
            self.call(client, "put", f"/api/v1/conversations/{conversation_id}/tasks/{step['key']}",
                      {"state": step["state"], "data": step.get("data", {})}, "task")
        else:
            raise StepFailed(f"unknown op {op!r}")

    def _entity_ref(self, external_id: str) -> str:
        for entity in self.case.get("entities") or []:
            if entity["id"] == external_id:
                return f"{entity['type']}/{external_id}"
        return f"_/{external_id}"

    # ------------------------------------------------------------------ probes
    def _dense(self, org: str, user: str, query: str, k: int, at: str, conversation_id: int) -> list[dict]:
        from evaluation.dense import dense_recall

        return dense_recall(org=org_get_or_create(slug=self._org_slug(org)), user_id=user, query=query, k=k,
                            at=at, conversation_id=conversation_id)

    def probe(self, step: dict) -> ProbeResult:
        org, user = step.get("org", self.case["org"]), step.get("user", self.case["user"])
        client = self.client(org, user)
        k = self.k_override or step.get("k", 5)
        expect, forbid, erased = step.get("expect", {}), step.get("forbid", {}), step.get("erased", {})
        result = ProbeResult(label=step["label"], passed=False, failures=[], k=k,
                             has_forbid=bool(forbid), has_erased=bool(erased),
                             entity_expected="entity" in expect, source_gold=list(expect.get("sources", [])))
        failures: list[str] = [f"unsupported: {op}" for op in self.unsupported]
        conversation_id = self.conversation(org, user, step["session"])
        items: list[dict] = []
        fetch_k = max([k, *self.source_ks]) if result.source_gold else k
        if self.baseline != "recent":
            started = time.perf_counter()
            body = self.call(client, "post", "/api/v1/recall", {"query": step["query"], "k": fetch_k, "at": step["at"],
                                                                "conversation_id": conversation_id}, "recall")
            result.recall_ms = (time.perf_counter() - started) * 1000
            if self.baseline == "dense":  # same memories, ranked by raw cosine only (dense.py)
                body = {"items": self._dense(org, user, step["query"], fetch_k, step["at"], conversation_id)}
            result.ranked_refs = [checks.item_refs(i) for i in body["items"]]
            items = body["items"][:k]
        context = None
        started = time.perf_counter()
        context_body = {"message": step["query"], "at": step["at"], "recent_only": self.baseline == "recent"}
        if step.get("budget"):
            context_body["budget"] = step["budget"]
        context = self.call(client, "post", f"/api/v1/conversations/{conversation_id}/context", context_body, "context")
        result.context_ms = (time.perf_counter() - started) * 1000
        result.context_tokens = checks.count_messages_tokens(context["messages"])
        resolution = None
        if "entity" in expect:
            try:
                resolution = self.call(client, "post", "/api/v1/entities/resolve",
                                       {"text": step["query"], "conversation_id": conversation_id}, "resolve")
            except Unsupported:
                failures.append("unsupported: entity resolution")
        per_expectation = checks.expectation_failures(expect, items, context, self.labels, budget=step.get("budget"))
        if "entity" in expect:
            entity_failures = checks.check_entity(expect["entity"], resolution)
            result.entity_ok = not entity_failures and resolution is not None
            per_expectation.append(entity_failures)
        result.expect_total = len(per_expectation)
        result.expect_hit = sum(1 for f in per_expectation if not f)
        for f in per_expectation:
            failures += f
        if forbid:
            violations = checks.check_forbid(forbid, items, context, self.labels)
            result.forbid_violated = bool(violations)
            failures += violations
        if erased:
            violations = checks.check_erased(erased, items, context)
            result.erased_violated = bool(violations)
            failures += violations
        result.failures = failures
        result.passed = not failures
        return result

    # ------------------------------------------------------------------ driver
    def run(self, drain) -> CaseResult:
        probes: list[ProbeResult] = []
        try:
            try:
                self.setup_entities()
            except Unsupported as exc:
                self.unsupported.append(f"entities ({exc})")
            pending: list[dict] = []
            for step in self.case["steps"]:
                if step["op"] == "message":
                    same = pending and (pending[0]["session"], pending[0].get("user"), pending[0].get("org")) == \
                        (step["session"], step.get("user"), step.get("org"))
                    if pending and not same:
                        self._flush_messages(pending)
                    pending.append(step)
                    continue
                self._flush_messages(pending)
                if step["op"] == "probe":
                    drain()
                    probes.append(self.probe(step))
                    continue
                try:
                    self.step(step)
                except Unsupported as exc:
                    self.unsupported.append(str(exc))
            self._flush_messages(pending)
        except StepFailed as exc:
            return CaseResult(id=self.case["id"], passed=False, probes=probes, error=str(exc))
        return CaseResult(id=self.case["id"], passed=all(p.passed for p in probes), probes=probes)


def new_run_id() -> str:
    return uuid.uuid4().hex[:6]


def load_cases(path: str, case_id: str | None = None) -> list[dict]:
    """Every case of the file, validated as a whole first: one unknown op, field or key refuses the file
    (ScenarioFormatError naming the case), so a newer file never runs half read."""
    cases = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                case = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScenarioFormatError(f"line {number}: not JSON ({exc.msg})") from exc
            validate_case(case, line=number)
            if case_id is None or case["id"] == case_id:
                cases.append(case)
    return cases
