"""The bodies REST and MCP share: the assembly request built from a validated ContextInputSerializer,
and the recall and context response bodies (their shapes are RecallOutputSerializer and
ContextOutputSerializer in memory/api/serializers.py). `POST /recall` and the MCP tool `recall_memory`
return the same items; `POST /conversations/{id}/context` and `get_context` the same body."""
from entities.selectors import entity_labels


def recall_item_data(item, labels: dict[int, str], explain: bool) -> dict:
    memory = item.memory
    data = {"id": memory.id, "kind": memory.kind, "assertion": memory.assertion, "content": memory.content,
            "valid_from": memory.valid_from, "valid_to": memory.valid_to, "occurred_at": memory.occurred_at,
            "created_at": memory.created_at, "version": memory.version, "sources": item.sources,
            "entity_ids": [labels.get(e, str(e)) for e in item.entity_ids], "score": item.score,
            # "history": a newer item on the same subject answers the query too (DESIGN §6); the
            # caller shows this one as what held before, with its date.
            "as": item.presented_as}
    if explain:
        data["score_parts"] = {k: v for k, v in item.parts.items() if k not in ("conflicts", "history", "entity_path")}
        if "conflicts" in item.parts:
            data["conflicts"] = item.parts["conflicts"]  # open possible conflicts this item is part of
        if "history" in item.parts:
            data["history"] = item.parts["history"]  # which newer item made it history, and why
        if "entity_path" in item.parts:  # recalled through a relation: which one
            path = item.parts["entity_path"]
            data["entity_path"] = {"from": labels.get(path["from"], str(path["from"])), "relation": path["relation"],
                                   "direction": path["direction"], "to": labels.get(path["to"], str(path["to"])),
                                   "current": "valid_to" not in path}
            if "valid_to" in path:  # an ended relation: history, dated
                data["entity_path"]["valid_to"] = path["valid_to"]
    return data


def recall_body(result, *, explain: bool) -> dict:
    """The recall response body; with explain, each item's score parts and the pipeline's stages and timings."""
    labels = entity_labels(entity_ids={e for item in result.items for e in item.entity_ids}
                           | {item.parts["entity_path"]["from"] for item in result.items if "entity_path" in item.parts})
    body = {"items": [recall_item_data(item, labels, explain) for item in result.items],
            "degraded": result.degraded, "degraded_reason": result.degraded_reason}
    if explain:
        body["stages"] = result.stages
        body["timings_ms"] = {k: round(t, 3) for k, t in result.timings_ms.items()}
    return body


def context_request(*, org, user_id: str, conversation, v: dict):
    """The assembly request from a validated ContextInputSerializer (REST and MCP alike)."""
    from memory.context import ContextRequest, Evidence

    return ContextRequest(
        org=org, user_id=user_id, conversation=conversation, message=v["message"], budget=v.get("budget"),
        system=v["system"], tools=v["tools"], at=v.get("at"), k=v.get("k"), recent_only=v["recent_only"],
        section_budgets=v["section_budgets"],
        evidence=[Evidence(id=e["id"], text=e["text"], source=e["source"], score=e.get("score")) for e in v["evidence"]])


def context_data(result) -> dict:
    """The context response body (REST and MCP alike)."""
    return {
        "budget": result.budget, "total_tokens": result.total_tokens, "recall_degraded": result.recall_degraded,
        "message_truncated": result.message_truncated,
        "sections": [{"name": sec.name, "tokens": sec.tokens, "text": sec.text, "included": sec.included,
                      "dropped": sec.dropped, "truncated": sec.truncated} for sec in result.sections],
        "messages": result.messages,
    }
