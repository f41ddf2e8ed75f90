"""Probe expectations of the scenario format (../shared/eval/FORMAT.md), as pure functions over
what the API returned. Each check returns a list of failure strings; empty means it held."""
import unicodedata

from conversations.tokens import count_messages_tokens


def norm(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text or "").casefold().split())


def item_refs(item: dict) -> list[str]:
    return [s["ref"] for s in item.get("sources", []) if s.get("ref")]


def _standing(items: list[dict]) -> list[dict]:
    """Items presented as standing knowledge: neither a dated episode nor an item the service marks as
    history (`"as": "history"`, FORMAT.md "Current and history"), which the format treats like an episode."""
    return [i for i in items if i["kind"] != "episode" and i.get("as", "current") != "history"]


def check_contains(expected: list[str], items: list[dict]) -> list[str]:
    return [f"expect.contains {s!r} not in any of the top-{len(items)} recalled items"
            for s in expected if not any(norm(s) in norm(i["content"]) for i in items)]


def check_sources(expected: list[str], items: list[dict]) -> list[str]:
    refs = {r for i in items for r in item_refs(i)}
    return [f"expect.sources {r!r} not among recalled sources" for r in expected if r not in refs]


def check_labels(expected: list[str], items: list[dict], labels: dict[str, int]) -> list[str]:
    ids = {i["id"] for i in items}
    out = []
    for label in expected:
        if label not in labels:
            out.append(f"expect.labels {label!r} was never written")
        elif labels[label] not in ids:
            out.append(f"expect.labels {label!r} (memory {labels[label]}) not recalled")
    return out


def check_items(expected: list[dict], items: list[dict]) -> list[str]:
    out = []
    for spec in expected:
        having = [i for i in items if norm(spec["contains"]) in norm(i["content"])]
        if not having:
            out.append(f"expect.items {spec['contains']!r} not recalled")
            continue
        ok = [i for i in having if (not spec.get("kind") or i["kind"] == spec["kind"])
              and (not spec.get("assertion") or i["assertion"] == spec["assertion"])]
        if not ok:
            got = ", ".join(f"{i['id']}:{i['kind']}/{i['assertion']}" for i in having)
            out.append(f"expect.items {spec['contains']!r} recalled but not as "
                       f"{spec.get('kind') or '*'}/{spec.get('assertion') or '*'} (got {got})")
    return out


def check_top(expected, items: list[dict]) -> list[str]:
    """expect.top entry: a string, or a list of strings that must all be in the FIRST recalled item."""
    wanted = [expected] if isinstance(expected, str) else list(expected)
    if not items:
        return [f"expect.top {wanted!r}: nothing recalled"]
    first = norm(items[0]["content"])
    missing = [s for s in wanted if norm(s) not in first]
    if not missing:
        return []
    return [f"expect.top {missing!r} not in the first recalled item {items[0]['id']} ({items[0]['kind']})"]


def check_standing(expected: list[str], items: list[dict]) -> list[str]:
    return [f"expect.standing {s!r} not in any recalled standing item (not an episode, not history)"
            for s in expected if not any(norm(s) in norm(i["content"]) for i in _standing(items))]


def check_unique(expected: list[str], items: list[dict]) -> list[str]:
    out = []
    for s in expected:
        holders = [i["id"] for i in _standing(items) if norm(s) in norm(i["content"])]
        if len(holders) > 1:
            out.append(f"expect.unique {s!r} in {len(holders)} standing items {holders}")
    return out


def context_text(context: dict | None) -> str:
    if not context:
        return ""
    return "\n".join(str(m.get("content") or "") for m in context.get("messages", []))


def memory_section_text(context: dict | None) -> str:
    if not context:
        return ""
    return "\n".join(s["text"] for s in context.get("sections", []) if s["name"] in ("memories", "preferences"))


def check_context(expected: list[str], context: dict | None) -> list[str]:
    text = norm(context_text(context))
    return [f"expect.context {s!r} not in the assembled context" for s in expected if norm(s) not in text]


def check_within_budget(budget: int | None, context: dict | None) -> list[str]:
    if context is None:
        return ["expect.within_budget: no context assembled"]
    counted = count_messages_tokens(context["messages"])  # recounted here, not taken from the server
    limit = budget or context["budget"]
    return [] if counted <= limit else [f"expect.within_budget: {counted} tokens > budget {limit}"]


def check_tool_pairs(context: dict | None) -> list[str]:
    if context is None:
        return ["expect.tool_pairs_intact: no context assembled"]
    out, open_calls = [], {}
    for index, message in enumerate(context["messages"]):
        if message["role"] == "assistant":
            for call in message.get("tool_calls") or []:
                open_calls[call["id"]] = index
        elif message["role"] == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                out.append(f"tool result {call_id!r} without its call before it")
            else:
                open_calls.pop(call_id)
    out += [f"tool call {c!r} without its result" for c in open_calls]
    return out


def check_entity(expected, resolution: dict | None) -> list[str]:
    if resolution is None:
        return ["expect.entity: no resolution"]
    status, got = resolution.get("status"), resolution.get("entity")
    candidates = sorted(c["external_id"] for c in resolution.get("candidates", []))
    if isinstance(expected, str):
        if status == "resolved" and got and got["external_id"] == expected:
            return []
        return [f"expect.entity {expected!r}: got {status} {got['external_id'] if got else candidates}"]
    if "ambiguous" in expected:
        if status == "ambiguous" and candidates == sorted(expected["ambiguous"]):
            return []
        return [f"expect.entity ambiguous {sorted(expected['ambiguous'])}: got {status} "
                f"{got['external_id'] if got else candidates}"]
    if expected.get("none"):
        return [] if status == "none" else [f"expect.entity none: got {status} {got['external_id'] if got else candidates}"]
    return [f"expect.entity: unknown expectation {expected!r}"]


def _phrases_found(key: str, phrases: list[str], items: list[dict], items_name: str, text: str, text_name: str) -> list[str]:
    """One failure for each place a phrase that must not show up does: the items that hold it, and the text."""
    out = []
    for s in phrases:
        holders = [i["id"] for i in items if norm(s) in norm(i["content"])]
        if holders:
            out.append(f"{key} {s!r} in {items_name} {holders}")
        if norm(s) in text:
            out.append(f"{key} {s!r} in {text_name}")
    return out


def check_forbid(forbid: dict, items: list[dict], context: dict | None, labels: dict[str, int]) -> list[str]:
    standing = _standing(items)
    out = _phrases_found("forbid.contains", forbid.get("contains", []), standing, "recalled standing items",
                         norm(memory_section_text(context)), "the context's memory section")
    for label in forbid.get("labels", []):
        memory_id = labels.get(label)
        if memory_id is not None and memory_id in {i["id"] for i in standing}:
            out.append(f"forbid.labels {label!r} (memory {memory_id}) recalled")
        if memory_id is not None and f"id {memory_id})" in memory_section_text(context):
            out.append(f"forbid.labels {label!r} in the context's memory section")
    return out


def check_erased(erased: dict, items: list[dict], context: dict | None) -> list[str]:
    return _phrases_found("erased.contains", erased.get("contains", []), items, "recalled items",
                          norm(context_text(context)), "the assembled context")


def expectation_failures(expect: dict, items: list[dict], context: dict, labels: dict[str, int], *,
                         budget: int | None) -> list[list[str]]:
    """The failures of each expectation of a probe but `entity` (the runner resolves that one), one
    list per expectation, empty where it is met; the report keeps this order."""
    out: list[list[str]] = []
    if "contains" in expect:
        out += [check_contains([s], items) for s in expect["contains"]]
    if "sources" in expect:
        out += [check_sources([r], items) for r in expect["sources"]]
    if "labels" in expect:
        out += [check_labels([lab], items, labels) for lab in expect["labels"]]
    if "items" in expect:
        out += [check_items([spec], items) for spec in expect["items"]]
    if "top" in expect:
        top = [expect["top"]] if isinstance(expect["top"], str) else expect["top"]
        out += [check_top(s, items) for s in top]
    if "standing" in expect:
        out += [check_standing([s], items) for s in expect["standing"]]
    if "unique" in expect:
        out += [check_unique([s], items) for s in expect["unique"]]
    if "context" in expect:
        out += [check_context([s], context) for s in expect["context"]]
    if expect.get("within_budget"):
        out.append(check_within_budget(budget, context))
    if expect.get("tool_pairs_intact"):
        out.append(check_tool_pairs(context))
    return out
