"""What a scenario file (../shared/eval/FORMAT.md, version 1) may say, and the check that refuses the rest.

A file written for a newer version of the format must not pass by being half read: an op, a step
field, an expectation, forbid or erased key (or a case / entity field) this runner does not know
makes the whole file invalid, with an error naming the case and the step.
"""

CASE_FIELDS = {"id", "description", "org", "user", "entities", "steps"}
ENTITY_FIELDS = {"type", "id", "name", "aliases", "attributes", "grants", "relations"}

# Fields every step may carry besides its op's own: the acting user and org.
COMMON_STEP_FIELDS = {"op", "user", "org"}
STEP_FIELDS: dict[str, set[str]] = {
    "message": {"session", "at", "role", "content", "ref", "tool_call_id", "tool_calls"},
    "memory": {"label", "kind", "content", "at", "key", "entities", "assertion"},
    "forget": {"at", "label", "query"},
    "reextract": {"session"},
    "revoke_session": {"session"},
    "grant_session": {"session"},
    "revoke_entity": {"entity"},
    "grant_entity": {"entity"},
    "task": {"session", "key", "state", "data"},
    "probe": {"label", "at", "session", "query", "k", "budget", "expect", "forbid", "erased"},
}
REQUIRED_STEP_FIELDS: dict[str, set[str]] = {
    "message": {"session", "at", "role"},
    "memory": {"label", "kind", "content"},
    "forget": {"at"},
    "reextract": {"session"},
    "revoke_session": {"session"},
    "grant_session": {"session"},
    "revoke_entity": {"entity"},
    "grant_entity": {"entity"},
    "task": {"session", "key", "state"},
    "probe": {"label", "at", "session", "query"},
}

EXPECT_KEYS = {"contains", "sources", "labels", "items", "top", "standing", "unique", "context", "entity",
               "within_budget", "tool_pairs_intact"}
EXPECT_ITEM_KEYS = {"contains", "kind", "assertion"}
ENTITY_EXPECT_KEYS = {"ambiguous", "none"}
FORBID_KEYS = {"contains", "labels"}
ERASED_KEYS = {"contains"}


class ScenarioFormatError(ValueError):
    """The file uses something this runner does not know; the message names the case and step."""


def _unknown(keys, known: set[str]) -> list[str]:
    return sorted(set(keys) - known)


def validate_case(case: dict, line: int | None = None) -> None:
    where = f"case {case.get('id')!r}" if isinstance(case, dict) and case.get("id") else f"line {line}"
    if not isinstance(case, dict):
        raise ScenarioFormatError(f"{where}: a case must be a JSON object")
    problems: list[str] = []
    for key in ("id", "org", "user", "steps"):
        if key not in case:
            problems.append(f"missing case field {key!r}")
    if bad := _unknown(case, CASE_FIELDS):
        problems.append(f"unknown case field(s) {bad}")
    for index, entity in enumerate(case.get("entities") or []):
        if not isinstance(entity, dict):
            problems.append(f"entities[{index}] is not an object")
        elif bad := _unknown(entity, ENTITY_FIELDS):
            problems.append(f"entities[{index}]: unknown field(s) {bad}")
        else:
            problems += [f"entities[{index}].relations[{i}]: {p}" for i, p in _relation_problems(entity.get("relations"))]
    steps = case.get("steps") or []
    if not isinstance(steps, list):
        problems.append("steps must be a list")
        steps = []
    for index, step in enumerate(steps):
        problems += [f"steps[{index}] ({step.get('op') if isinstance(step, dict) else '?'}): {p}"
                     for p in _step_problems(step)]
    if problems:
        raise ScenarioFormatError(f"{where}: " + "; ".join(problems))


RELATION_FIELDS = {"type", "to", "valid_from", "valid_to", "source"}


def _relation_problems(relations) -> list[tuple[int, str]]:
    if relations is None:
        return []
    if not isinstance(relations, list):
        return [(0, "relations must be a list")]
    problems = []
    for index, relation in enumerate(relations):
        if not isinstance(relation, dict):
            problems.append((index, "a relation must be an object"))
        elif bad := _unknown(relation, RELATION_FIELDS):
            problems.append((index, f"unknown field(s) {bad}"))
        elif missing := sorted({"type", "to"} - set(relation)):
            problems.append((index, f"missing field(s) {missing}"))
    return problems


def _step_problems(step) -> list[str]:
    if not isinstance(step, dict):
        return ["a step must be a JSON object"]
    op = step.get("op")
    if op not in STEP_FIELDS:
        return [f"unknown op {op!r}"]
    problems = []
    if bad := _unknown(step, STEP_FIELDS[op] | COMMON_STEP_FIELDS):
        problems.append(f"unknown field(s) {bad}")
    if missing := sorted(REQUIRED_STEP_FIELDS[op] - set(step)):
        problems.append(f"missing field(s) {missing}")
    if op == "forget" and ("label" in step) == ("query" in step):
        problems.append("needs exactly one of 'label' or 'query'")
    if op == "probe":
        problems += _probe_problems(step)
    return problems


def _probe_problems(step: dict) -> list[str]:
    problems = []
    for name, known in (("expect", EXPECT_KEYS), ("forbid", FORBID_KEYS), ("erased", ERASED_KEYS)):
        block = step.get(name, {})
        if not isinstance(block, dict):
            problems.append(f"{name} must be an object")
        elif bad := _unknown(block, known):
            problems.append(f"unknown {name} key(s) {bad}")
    expect = step.get("expect") if isinstance(step.get("expect"), dict) else {}
    for index, spec in enumerate(expect.get("items") or []):
        if not isinstance(spec, dict) or "contains" not in spec:
            problems.append(f"expect.items[{index}] needs 'contains'")
        elif bad := _unknown(spec, EXPECT_ITEM_KEYS):
            problems.append(f"expect.items[{index}]: unknown key(s) {bad}")
    entity = expect.get("entity")
    if isinstance(entity, dict):
        if bad := _unknown(entity, ENTITY_EXPECT_KEYS):
            problems.append(f"expect.entity: unknown key(s) {bad}")
        elif not entity:
            problems.append("expect.entity: empty object")
    elif entity is not None and not isinstance(entity, (str, dict)):
        problems.append("expect.entity must be an id or an object")
    return problems
