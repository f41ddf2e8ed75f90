"""Resolution steps over what the registry knows beyond names (DESIGN §8): attribute values, name parts
and relations. Called by entities/resolver.py; pure, the caller's gate decides visibility."""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from entities.name_parts import rare_word
from entities.surface import normalize, normalize_key

_CODE_CHARS = frozenset("0123456789")
_CJK = re.compile("[\u3400-\u9fff]")
MAX_BRIDGE_ENTITIES = 500  # a named set larger than this is not walked for relations
# Interrogative determiners (a closed class): "哪辆车", "哪台设备", "which vessel".
_WHICH = re.compile(r"哪(?:辆|台|家|个|张|位|间|部|款|条|只|所|座|栋)|\bwhich\b", re.IGNORECASE)


def _asks_which(rest: str, spans: Sequence[tuple[int, int]]) -> bool:
    """The text asks "which ..." after the named entity."""
    after = max((end for _start, end in spans), default=0)
    return _WHICH.search(rest, after) is not None


@dataclass
class Narrowed:
    ids: list[int]
    step: dict = field(default_factory=dict)


def _code_like(value: str) -> bool:
    """A model code, plate or serial ("vms-v300", "9yf-2.2"): named on its own, it means the things that carry it.
    A word value ("open", "北场") means them only beside a pointer ("那台", "the") or a type word."""
    return any(ch in _CODE_CHARS for ch in value)


def _topic(text: str, value: str) -> bool:
    """The value opens the sentence as a possessor ("柯基的疫苗打了吗", "联影的工程师电话", "王雪家的猫"): it names what
    carries it, as it would beside a pointer."""
    norm = normalize(text).text.lstrip()
    return norm.startswith((value + "的", value + "家的"))  # "王雪家的猫": her household's


def _whole_word(text: str, part: str) -> bool:
    """`part` is a word of the text as the segmenter cuts it: "春熙" is not said in "春熙路店"."""
    from entities.partial import word_boundaries

    norm = normalize(text).text
    at = norm.find(part)
    cuts = word_boundaries(norm)
    return at >= 0 and at in cuts and at + len(part) in cuts


def _possesses_other(text: str, part: str, matcher) -> bool:
    """`part` is followed by "的" and a thing the registry does not know, named as its things are ("后道的折页机": a
    folding machine of the finishing shop, where the registry's machines end in 机 and none is a 折页机). The part only
    says where that unregistered thing is; "朗逸的空调" (a component, no name ends like it) still names the car."""
    norm = normalize(text).text
    at = norm.find(part)
    if at < 0 or norm[at + len(part):at + len(part) + 1] != "的" or not hasattr(matcher, "name_heads"):
        return False
    from entities.partial import quiet_jieba
    from entities.typewords import known_word

    heads = matcher.name_heads()
    phrase = ""
    for word in quiet_jieba().lcut(norm[at + len(part) + 1:at + len(part) + 9], HMM=False)[:2]:
        if not _CJK.match(word):
            break
        phrase += word
        if word[-1] in heads:
            return not known_word(matcher, phrase)
    return False


def _numbered_word(part: str) -> bool:
    """A registered number with its Chinese measure ("5栋" of 5号楼): short, but it names one thing, not a kind."""
    from entities.name_parts import is_qualifier

    return any(ch.isdigit() for ch in part) and bool(_CJK.search(part)) and not is_qualifier(part)


def _heads_all(text: str, ids: Sequence[int], found: Sequence[str], matcher) -> bool:
    """A word of the text that ends every name it was found in ("空调" of 客厅空调 / 面馆前厅空调): the head of those
    names, what they are; said alone it names them, as a learnt type label names a whole type."""
    return len(found) == 1 and hasattr(matcher, "get") and _whole_word(text, found[0]) \
        and not _possesses_other(text, found[0], matcher) \
        and all(_name_ends_with(matcher.get(i), found[0]) for i in ids)


def _name_ends_with(ref, part: str) -> bool:
    """A thing's name ends with `part` (a person's "王爷爷" ends with a kinship title, which names no one)."""
    from entities.partial import skeleton
    from entities.typenouns import kinds_of_type

    return ref is not None and "person" not in kinds_of_type(ref.type) \
        and any(skeleton(n).endswith(part) for n in (ref.name, *ref.aliases))


def _possessed(text: str, ids: Sequence[int], found: Sequence[str], matcher,
               visible: Callable[[Sequence[int]], list[int]]) -> tuple[list[int], list[str]] | None:
    """"李先生家的电池": among the best-scoring entities, those named by words before a "的" possess the thing a part
    after it names; the head after the 的 is the thing meant: the head's entities related to the possessor's (visible
    ones only). None when the text is not read that way or no head entity is related."""
    if not hasattr(matcher, "part_hits") or not hasattr(matcher, "neighbours"):
        return None
    norm = normalize(text).text
    hits = [(start, start + len(part), part, set(held)) for start, part, held in matcher.part_hits(text)]
    best = set(ids)
    for de in (i for i, ch in enumerate(norm) if ch == "的"):
        owners = {i for _s, end, _p, held in hits if end <= de for i in held & best}
        # The head names a thing as its name ends ("储能电池"), not an aspect of the possessor a record is about
        # ("格力空调的清洗", "DX-0088 的球管" where a work order's name holds 清洗 or 球管 in the middle).
        heads = [(part, held) for start, _e, part, held in hits
                 if start > de and len(held) <= MAX_BRIDGE_ENTITIES and not owners & held
                 and all(_ends_with(matcher.get(i), part) for i in held)]
        if not owners or not heads:
            continue
        held = sorted({i for _p, h in heads for i in h})
        related = [i for i in visible(held) if related_to(i, owners, matcher, visible)]
        if related:
            return related, [*found, *(p for p, _h in heads if p not in found)]
    return None


def _ends_with(ref, part: str) -> bool:
    return ref is not None and any(normalize_key(n).endswith(part) for n in (ref.name, *ref.aliases))


def by_attributes_and_parts(text: str, *, matcher, visible: Callable[[Sequence[int]], list[int]],
                            visible_prefix: Callable[[Sequence[int], int | None], list[int]], limit: int | None,
                            pointed: bool, skeleton_ids: Sequence[int], require_values: bool = False,
                            fits: Callable[[int], bool] | None = None) -> Narrowed | None:
    """The entities named by attribute values and name parts together: each value names every entity that
    carries it, the best-scoring name parts name theirs, and what is named by all of them is the answer
    ("北场那台 SK-16": site 北场 ∩ model SK-16). `pointed`: the text has a pointer or type word; `fits`: what a
    pointer's classifier asks of the answer ("那台": a device, not the work order about it), None when it asks nothing.
    None when the text names nothing this way.

    Access is asked only as far as the answer needs: one set alone (a category word can name thousands)
    is read in id order up to `limit` + 1; several are intersected starting from the smallest, whose
    visible part bounds the answer, so a hidden entity behaves as an unregistered one."""
    sets: list[tuple[str, tuple[int, ...]]] = []
    values: list[str] = []
    for value, ids in (matcher.attribute_hits(text) if hasattr(matcher, "attribute_hits") else []):
        if pointed or _code_like(value) or _topic(text, value):
            sets.append(("value", tuple(ids)))
            values.append(value)
    if require_values and not sets:
        return None
    parts: list[str] = []
    if skeleton_ids:
        sets.append(("skeleton", tuple(sorted(skeleton_ids))))
    elif hasattr(matcher, "name_part_candidates"):
        ids, found_parts = matcher.name_part_candidates(text)
        if ids and (pointed or sum(len(p) for p in found_parts) >= 3 or values
                    or any(hasattr(matcher, "is_name_part") and matcher.is_name_part(p) and rare_word(p)
                           and _whole_word(text, p) and not _possesses_other(text, p, matcher) for p in found_parts)
                    or _heads_all(text, ids, found_parts, matcher) or any(_numbered_word(p) for p in found_parts)):
            if (headed := _possessed(text, ids, found_parts, matcher, visible)) is not None:
                ids, found_parts = headed
            sets.append(("parts", tuple(ids)))
            parts = found_parts
    if not sets:
        return None
    if len(sets) == 1:
        found = visible_prefix(sets[0][1], None if limit is None else limit + 1)
    else:
        ordered = sorted(sets, key=lambda item: len(item[1]))
        current = set(visible(ordered[0][1]))
        for _kind, ids in ordered[1:]:
            current &= set(ids)
        if not current:
            # Nothing carries every named value and part: one of them may qualify the other through a relation
            # ("the R750 in Hall 2": the R750 located in a Hall 2 rack). If none does, the text names nothing.
            current = _bridged(ordered, matcher, visible, fits)
            if not current:
                return Narrowed([], {"rule": "attributes_parts", "values": values, "parts": parts, "entity_ids": [],
                                     "detail": "no entity carries every named value"})
        found = sorted(current)
    if not found:
        return None
    step = {"rule": "attributes_parts", "values": values, "parts": parts, "entity_ids": list(found)}
    return Narrowed(list(found), step)


def _bridged(ordered, matcher, visible, fits: Callable[[int], bool] | None = None) -> set[int]:
    """Entities of one named set related to an entity of another named set (visible ones only). A set none of whose
    entities fits the pointer's classifier is only the other's qualifier ("KQSN300-M6那台的轴承": the pump of that
    model, not the work order whose part is a bearing), when another set has one that fits."""
    if not hasattr(matcher, "neighbours"):
        return set()
    fitting = [any(fits(i) for i in ids) for _kind, ids in ordered] if fits is not None else []
    for n, (_kind, ids) in enumerate(ordered):  # smallest first
        if len(ids) > MAX_BRIDGE_ENTITIES:
            break
        if fitting and not fitting[n] and any(fitting):
            continue
        # Only a partner the user may read bridges: a hidden R750 must not make its rack "the R750 in Hall 2".
        # Values bridge values: a name part shared by many ("hall") is too loose to relate two named things.
        others = set(visible(sorted(set().union(*(set(o) for k, o in ordered if o is not ids and k == "value")))))
        related = {i for i in ids if any(other in others for other, _t, _d in matcher.neighbours(i))}
        if not related:
            # Two hops, through a visible entity that is itself small ("A栋的那张护理床": the bed in a room on the
            # floor of wing A): a hub with many neighbours (a site of thousands of assets) bridges nothing.
            related = {i for i in ids if _two_hops(i, others, matcher, visible)}
        if related:
            return set(visible(sorted(related)))
    return set()


MAX_HUB_NEIGHBOURS = 50


def related_to(entity: int, targets: set[int], matcher, visible) -> bool:
    """`entity` is a neighbour of one of `targets`, or two hops away through a small visible entity."""
    return any(other in targets for other, _t, _d in matcher.neighbours(entity)) \
        or _two_hops(entity, targets, matcher, visible)


def _two_hops(entity: int, targets: set[int], matcher, visible) -> bool:
    middles = [other for other, _t, _d in matcher.neighbours(entity)]
    for middle in visible(middles):
        around = matcher.neighbours(middle)
        if len(around) <= MAX_HUB_NEIGHBOURS and any(o in targets for o, _t, _d in around if o != entity):
            return True
    return False


def follow_relations(anchors: Sequence[int], *, matcher, accepts: Callable[[int], bool],
                     visible: Callable[[Sequence[int]], list[int]]) -> Narrowed | None:
    """The neighbours of `anchors` that the type words ask for ("那台青贮收获机的工单", "its work order"). None when
    no anchor has a relation to such an entity (the other rules decide then); an empty answer when there
    are some but the user may read none (never a guess among the rest)."""
    targets: list[int] = []
    paths: list[dict] = []
    for anchor in anchors:
        for other, type_, direction in (matcher.neighbours(anchor) if hasattr(matcher, "neighbours") else ()):
            if accepts(other) and other not in targets:
                targets.append(other)
                paths.append({"from": anchor, "relation": type_, "direction": direction, "to": other})
    if not targets:
        return None
    seen = visible(targets)
    step = {"rule": "relation", "anchors": list(anchors), "entity_ids": seen,
            "paths": [p for p in paths if p["to"] in seen]}
    return Narrowed(seen, step)


def via_anchor(text: str, *, spans: Sequence[tuple[int, int]], anchors: Sequence[int], other_types: set[str],
               matcher, visible: Callable[[Sequence[int]], list[int]], type_of: Callable[[int], str]) -> Narrowed | None:
    """A named entity used as a qualifier of another kind of thing: "滨江店的 SM-900" is the SM-900 located at
    滨江店, "王晓东那家店" the store he belongs to. What the rest of the text names (attribute values, name
    parts, type words), among the anchors' neighbours, is the answer. None when the rest names nothing
    related to them (the named entity itself is then meant)."""
    neighbours: dict[int, dict] = {}
    for anchor in anchors:
        for other, type_, direction in (matcher.neighbours(anchor) if hasattr(matcher, "neighbours") else ()):
            neighbours.setdefault(other, {"from": anchor, "relation": type_, "direction": direction, "to": other})
    if not neighbours:
        return None
    masked = list(text)
    for start, end in spans:
        masked[start:end] = " " * (end - start)
    if spans and _CJK.search(text):
        # A Chinese modifier comes before its head: what stands before the named entity qualifies it ("南库电动叉车"),
        # it is not a neighbour the text asks for.
        first = min(start for start, _end in spans)
        masked[:first] = " " * first
    rest = "".join(masked)
    named: list[set[int]] = [set(ids) for _value, ids in matcher.attribute_hits(rest)]
    part_ids, _parts = matcher.name_part_candidates(rest)
    if part_ids:
        named.append(set(part_ids))
    skeleton_ids, _spans = matcher.partial(rest) if hasattr(matcher, "partial") else ([], [])
    if skeleton_ids:
        named.append(set(skeleton_ids))
    for type_ in other_types:  # the neighbours of that type, not every entity of it (tens of thousands)
        named.append({i for i in neighbours if type_of(i) == type_})
    overlaps = [s & set(neighbours) for s in named]
    overlaps = [s for s in overlaps if s]
    if not overlaps:
        # "维修单079 对应的是哪辆车": a question for what the named entity is related to, with no word the registry
        # knows for it: its neighbours, when they are all of one kind.
        if not _asks_which(rest, spans) or len({type_of(i) for i in neighbours}) != 1:
            return None
        overlaps = [set(neighbours)]
    found = set.intersection(*overlaps) or min(overlaps, key=len)
    seen = visible(sorted(found))
    step = {"rule": "qualified_by_relation", "anchors": list(anchors), "entity_ids": seen,
            "paths": [neighbours[i] for i in seen]}
    return Narrowed(seen, step)
