"""Mentions that name an entity by a part of its name or by an attribute value (DESIGN §8).

People rarely say a registered name whole: "那台喷雾机" for 3号喷杆喷雾机, "5号拖拉机" for 5号轮式拖拉机,
"那辆保温车" for 浙A·保温12 / 浙A·保温15, "the VMS-V300" where `model: VMS-V300` is an attribute, "北场那台
SK-16" where the site is an attribute too. Both indexes are learnt from the registry itself, so a
business's own vocabulary needs no table: a part shared by the names of several entities ("保温",
"体验店") names all of them, a part of one name names that one.

- Name parts (entities/name_parts.py; a person's forms, entities/person_forms.py): each name and alias
  segmented (jieba for Chinese, words for Latin), numerals with their measure kept whole ("5号"). A text's
  score for an entity is the characters of its distinct parts found in the text; the best-scoring entities
  are the candidates.
- Attribute values: every string value (and each item of a list value) of an entity's attributes.
Pure Python, no Django.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

import ahocorasick

from entities.name_parts import CJK, CODE, abbreviations, initialism, is_qualifier, name_parts, rare_word, unknown_words
from entities.partial import skeleton, type_words, word_boundaries
from entities.person_forms import given_name, person_forms
from entities.surface import EntityRef, inside_token, normalize, normalize_key
from entities.typenouns import kinds_of_type, works_here

__all__ = ["AttributeIndex", "PartIndex", "attribute_values"]

MIN_VALUE_CHARS = 2
MAX_PART_ENTITIES = 200
MAX_VALUE_CHARS = 80  # a description is not a value anyone says
# A Latin code with a digit, standing as a token ("x3", "a4-2"), not a Chinese numbered qualifier ("3号") and not a
# bare number after a space (see _NUMBER_AFTER_WORD).
_GLUED_CODE = re.compile(r"(?<![a-z0-9])[a-z]+[0-9][a-z0-9\-]*(?![a-z0-9号])|(?<![a-z0-9 ])[0-9]+[a-z][a-z0-9\-]*(?![a-z0-9号])")
_NUMBER_AFTER_WORD = re.compile(r"(?<=[a-z] )[0-9]{1,4}\b(?![\-·./#][0-9a-z])")
# A number right after a Chinese word, with no 号 ("逐浪2", "锦绣花园18栋"): the number of what that word names.
_NUMBER_AFTER_CJK = re.compile(r"(?<=[\u3400-\u9fff])[0-9]{1,4}(?![0-9a-z\-·./#])")
_NUMBER_IN_TEXT = re.compile(r"(?<![0-9])(?:[0-9]+|[零〇一二三四五六七八九十百千两]+)号")
# A pointer with its classifier and one character after it ("哪只桶", "那个罐子", "哪个罐里"): the character may be
# the head of a learnt label, standing for its type; followed by another word character it is the start of a word.
_POINTED_HEAD = re.compile("[那这哪该][辆台家个张位间部款条只所座栋件份单艘套批把块根架头]([\u3400-\u9fff]子?)")
# After the head: no word character, a place word, or a function word that starts no noun compound ("那栋楼到几层了").
_AFTER_HEAD = re.compile("(?![\u3400-\u9fff])|[里的上中内在是有到要还都也就又呢吗啊了没不能会]")


# A joiner between two letters or digits of a code ("·" of 苏a·3k782, "-" of kq21-08820).
_JOINED_CODE = re.compile(r"(?<=[a-z0-9])[·\-](?=[a-z0-9])")


@lru_cache(maxsize=1)
def _function_words() -> frozenset[str]:
    """English function words (scikit-learn's stop list, a well-kept one; imported once, on the first registry)."""
    from sklearn.feature_extraction._stop_words import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def attribute_values(attributes: Mapping) -> set[str]:
    values: set[str] = set()
    for value in (attributes or {}).values():
        for item in (value if isinstance(value, list) else [value]):
            if isinstance(item, str):
                key = normalize_key(item)
                if MIN_VALUE_CHARS <= len(key) <= MAX_VALUE_CHARS:
                    values.add(key)
    return values


def _automaton(index: dict[str, set[int]]):
    if not index:
        return None
    automaton = ahocorasick.Automaton()
    for key, ids in index.items():
        automaton.add_word(key, (len(key), tuple(sorted(ids))))
    automaton.make_automaton()
    return automaton


def _hits(automaton, text: str):
    """(start, end, key, ids) for whole-token occurrences in the normalised text; a numbered qualifier
    must not be the tail of a longer number ("5号" is not in "15号")."""
    if automaton is None or not text:
        return []
    norm = normalize(text)
    s = norm.text
    out = []
    for last, (length, ids) in automaton.iter(s):
        start, end = last - length + 1, last + 1
        if inside_token(s, start, end) or (start > 0 and s[start - 1].isdigit() and s[start].isdigit()):
            continue
        out.append((start, end, s[start:end], ids))
    return out


class PartIndex:
    """Name part (and attribute value part) → entity ids over one registry snapshot."""

    def __init__(self, refs: Iterable[EntityRef], attributes: Mapping[int, Mapping] | None = None):
        index: dict[str, set[int]] = {}
        by_type: dict[str, set[int]] = {}
        type_of: dict[int, str] = {}
        refs = list(refs)
        surfaces: dict[int, tuple[str, ...]] = {}
        for ref in refs:
            by_type.setdefault(ref.type, set()).add(ref.id)
            type_of[ref.id] = ref.type
            surfaces[ref.id] = (ref.name, *ref.aliases)
            for surface in (ref.name, *ref.aliases):
                for part in name_parts(surface):
                    index.setdefault(part, set()).add(ref.id)
            if "person" in kinds_of_type(ref.type):
                for part in person_forms(ref.name, staff=works_here(ref.type)):
                    index.setdefault(part, set()).add(ref.id)
        # Registered type names are type words ("the open ticket"), never a part of one name ("disk failure ticket").
        for word in type_words(by_type):
            index.pop(word, None)
        # A part every entity of a type carries ("工单" of 工单0231 / 工单0238) is that type's label: it
        # says which kind is meant, not which one, so it becomes a type word instead of a name part.
        self.type_words: dict[str, str] = {}
        for part, ids in list(index.items()):
            types = {type_of[i] for i in ids}
            if len(types) == 1 and len(ids) >= 2 and ids == by_type[next(iter(types))] and not is_qualifier(part):
                self.type_words[part] = next(iter(types))
                del index[part]
        # ... and so is a head every name of a type ends with, however the segmenter cut the names ("叉车" of
        # 林德电动叉车01 / 丰田前移式叉车, found inside "电动叉车"); a shared modifier ("烘干" of 烘干一号塔 / 1号烘干机) is not.
        before = {part: len(ids) for part, ids in index.items()}
        # A Chinese part names every entity whose name holds it, however the segmenter cut that name: "液相" of
        # 老液相 is in 液相色谱仪2号 too (one automaton pass over the names, not a scan per part).
        cjk = _automaton({part: {0} for part in index if CJK.search(part)})
        if cjk is not None:
            for ref in refs:
                for surface in (ref.name, *ref.aliases):
                    key = normalize_key(surface)
                    for last, (length, _ids) in cjk.iter(key):
                        index[key[last - length + 1:last + 1]].add(ref.id)
        for part, ids in list(index.items()):
            types = {type_of[i] for i in ids}
            if len(types) != 1 or len(ids) < 2 or before.get(part) == len(ids) or is_qualifier(part):
                continue
            type_ = next(iter(types))
            if ids == by_type[type_] and all(any(skeleton(sf).endswith(part) for sf in surfaces[i]) for i in ids):
                self.type_words[part] = type_
                del index[part]
        abbreviated: dict[str, set[int]] = {}
        # A name shortened to one of its words and its head character: "四色机" of 海德堡四色胶印机, "捷达车" of 捷达教练车11号
        # (Chinese abbreviates a compound by keeping a modifier and the head's last morpheme; not contiguous in the
        # name, so neither a part nor a skeleton finds it).
        for ref in refs:
            if "person" in kinds_of_type(ref.type):
                continue
            for surface in surfaces[ref.id]:
                for form in abbreviations(surface) | ({initials} if (initials := initialism(surface)) else set()):
                    if form not in self.type_words and form not in index:
                        abbreviated.setdefault(form, set()).add(ref.id)
        # ... and a person by the given name ("子豪" of 李子豪), read as a whole word too ("国庆" of 张国庆 is not in "国庆节").
        for ref in refs:
            if "person" in kinds_of_type(ref.type) and (given := given_name(ref.name)) is not None \
                    and given not in index and given not in self.type_words:
                abbreviated.setdefault(given, set()).add(ref.id)
        # ... and by a rare word inside a word the segmenter did not know: a brand it cut badly ("宏光" of 白色五菱宏光, cut
        # 白色 / 五 / 菱宏光) is said by its own two characters.
        for ref in refs:
            if "person" in kinds_of_type(ref.type):
                continue
            for surface in surfaces[ref.id]:
                for word in unknown_words(surface):
                    for form in {word[i:i + 2] for i in range(len(word) - 1)}:
                        if rare_word(form) and form not in index and form not in self.type_words:
                            abbreviated.setdefault(form, set()).add(ref.id)
        index.update(abbreviated)
        self._abbreviated = frozenset(abbreviated)
        self.name_keys = frozenset(index)
        # Parts of attribute values name their entities the same way ("吸唾管" of item 吸唾管堵塞, "shrimp" of
        # cargo frozen shrimp): a description is read by its words, a code whole (AttributeIndex).
        self._value_holders: dict[str, set[int]] = {}
        function_words = _function_words() if attributes else frozenset()
        for eid, attrs in (attributes or {}).items():
            for value in attribute_values(attrs):
                for part in name_parts(value):
                    # A value is often a phrase ("guest star (under NDA)"): its function words name nothing.
                    if part not in self.type_words and part not in function_words:
                        index.setdefault(part, set()).add(eid)
                        self._value_holders.setdefault(part, set()).add(eid)
        self._index = index
        self._by_type = by_type
        # The codes each entity's names and values carry ("x5" of 宝马X5): what a code glued to a part must be; and
        # each name's or value's numbers, as numbers ("02" is 2): what "Transit 2" must agree with, by the name that
        # holds the word ("Brass lantern 3" is not Brass lantern 1 stored in "Bay 3").
        keys = {ref.id: [normalize_key(sf) for sf in (*surfaces[ref.id],
                                                      *attribute_values((attributes or {}).get(ref.id) or {}))]
                for ref in refs}
        self._codes = {eid: frozenset(code for key in ks for code in CODE.findall(key)) for eid, ks in keys.items()}
        self._key_numbers = {eid: tuple((key, frozenset(int(n) for n in re.findall(r"[0-9]+", key) if len(n) <= 6))
                                        for key in ks) for eid, ks in keys.items()}
        self._name_keys = {ref.id: frozenset(keys[ref.id][:len(surfaces[ref.id])]) for ref in refs}
        by_number: dict[int, set[int]] = {}
        for eid, pairs in self._key_numbers.items():
            for key, numbers in pairs:
                if key in self._name_keys[eid]:
                    for n in numbers:
                        by_number.setdefault(n, set()).add(eid)
        self._by_number = {n: frozenset(ids) for n, ids in by_number.items()}
        # What the registry's names say right after a number ("栋" of 锦绣花园12栋, "号"): a number glued after a word
        # and followed by one of these is a name's number; "10度" is a quantity.
        self._after_number = frozenset(m.group(1) for ref in refs for sf in surfaces[ref.id]
                                       for m in re.finditer(r"[0-9]([\u3400-\u9fff])", normalize_key(sf)))
        self._automaton = _automaton(index)
        self._typos = None
        self._type_automaton = _automaton({w: {0} for w in self.type_words})
        self._heads = self.label_heads()
        # ... and the character every name of a type ends with once its numbers are dropped ("楼" of 3号楼 / 5号楼 /
        # 6号楼, whose "号楼" other types' names hold too): "那栋楼" is one of them ("哪栋楼" asks, it names none).
        self._end_heads: dict[str, frozenset[str]] = {}
        for type_, ids in by_type.items():
            ends = {key[-1] for i in ids if (key := skeleton(surfaces[i][0]))}
            if len(ids) >= 2 and len(ends) == 1 and CJK.match(end := next(iter(ends))):
                self._end_heads[end] = self._end_heads.get(end, frozenset()) | {type_}
        # The last character of every thing's name ("机" of 切纸机, "间" of 后道车间): what a name for a thing ends with.
        self.name_heads = frozenset(key[-1] for ref in refs if "person" not in kinds_of_type(ref.type)
                                    for sf in surfaces[ref.id] if (key := skeleton(sf)) and CJK.match(key[-1]))

    def typo_index(self):
        """The registry's words for reading typos (entities/typos.py: Chinese by sound, Latin by one edit), built on
        first use: only a text that names nothing as typed is read that way."""
        if self._typos is None:
            from entities.typos import TypoIndex

            self._typos = TypoIndex([*self._index, *self.type_words])
        return self._typos

    def label_heads(self) -> dict[str, frozenset[str]]:
        """The last character of each learnt label ("罐" of 发酵罐, "桶" of 橡木桶) → the types it ends."""
        heads: dict[str, set[str]] = {}
        for word, type_ in self.type_words.items():
            if len(word) >= 2 and CJK.match(word[-1]):
                heads.setdefault(word[-1], set()).add(type_)
        return {ch: frozenset(types) for ch, types in heads.items()}

    def type_cues(self, text: str) -> list[tuple[str, str, int, int]]:
        """(word, type, start, end) for each learnt type label named in `text` (spans in the caller's text)."""
        norm = normalize(text)
        out = []
        for start, end, word, _ids in _hits(self._type_automaton, text):
            out.append((word, self.type_words[word], *norm.original_span(start, end)))
        for m in _POINTED_HEAD.finditer(norm.text):
            # Followed by another word character, the character is a word of its own only where the segmenter
            # ends one ("那个站今天": 站 / 今天; not "那个站台").
            if not _AFTER_HEAD.match(norm.text, m.end(1)) and m.end(1) not in word_boundaries(norm.text):
                continue
            ends = self._end_heads.get(m.group(1)[0], ()) if norm.text[m.start()] != "哪" else ()
            for type_ in sorted(set(self._heads.get(m.group(1)[0], ())) | set(ends)):
                out.append((m.group(1), type_, *norm.original_span(m.start(1), m.end(1))))
        return out

    def hits(self, text: str) -> list[tuple[int, str, tuple[int, ...]]]:
        """(start in the normalised text, part, entity ids) for each name or value part named in `text`."""
        return [(start, part, ids) for start, _end, part, ids in self._name_hits(text)]

    def holders(self, text: str, limit: int) -> set[int]:
        """Entities with a part of a name, an alias or an attribute value that occurs in `text`, and for each
        learnt type label in it ("叉车" of every forklift) every entity of that type; a part held by more than
        `limit` entities is skipped (it tells none apart)."""
        found: set[int] = set()
        for _start, _end, _part, ids in self._name_hits(text):
            if len(ids) <= limit:
                found.update(ids)
        for _start, _end, word, _ids in _hits(self._type_automaton, text):
            ids = self._by_type.get(self.type_words[word], ())
            if len(ids) <= limit:
                found.update(ids)
        return found

    def _name_hits(self, text: str):
        """The parts found in `text`; an abbreviation ("四色机") only as a whole word of the text, so "东湖地" of
        东湖科目二场地 is not read inside "东湖地区"."""
        hits = _hits(self._automaton, text)
        # A part inside a longer learnt label is the label's ("教练" of "教练车", every car's label, is not the 教练 of
        # 周教练): the text says which kind, not which one.
        labels = [(start, end) for start, end, _w, _ids in _hits(self._type_automaton, text)]
        if labels:
            hits = [h for h in hits if not any(s <= h[0] and h[1] <= e and e - s > h[1] - h[0] for s, e in labels)]
        if not any(h[2] in self._abbreviated for h in hits):
            return hits
        from entities.partial import word_boundaries

        cuts = word_boundaries(normalize(text).text)
        return [h for h in hits if h[2] not in self._abbreviated or (h[0] in cuts and h[1] in cuts)]

    def value_holders(self, part: str) -> tuple[int, ...]:
        """Entities with `part` as a whole word of an attribute value ("reefer" of "40ft reefer")."""
        return tuple(sorted(self._value_holders.get(normalize_key(part), ())))

    def best(self, text: str) -> tuple[list[int], list[str]]:
        """The entities whose parts cover the most characters of `text` (at least one part that is not a
        bare qualifier), with the parts found."""
        scores: dict[int, dict[str, int]] = {}
        spans: dict[int, list[tuple[int, int, str]]] = {}
        for start, end, part, ids in self._name_hits(text):
            if len(ids) > MAX_PART_ENTITIES:
                continue  # a word shared by that many names tells none apart (type and category words do that)
            for eid in ids:
                scores.setdefault(eid, {})[part] = len(part)
                spans.setdefault(eid, []).append((start, end, part))
        # A bare qualifier names nothing, unless a label of the entity's type follows it: "3号泊位" is every berth
        # numbered 3.
        bare = {eid for eid, parts in scores.items() if all(is_qualifier(p) for p in parts)}
        if bare:  # the labels are looked up only then: most texts name something more than a number
            labels = [(start, self.type_words[word]) for start, _end, word, _ids in _hits(self._type_automaton, text)]
            bare -= {eid for eid in bare for _s, e, _p in spans[eid] for start, type_ in labels
                     if e == start and eid in self._by_type.get(type_, ())}
            scores = {eid: parts for eid, parts in scores.items() if eid not in bare}
        # What the text names most fully before its numbers are read: when numbers rule all of those out ("Wet Lab 3"
        # where Wet Lab 1 and 2 are registered), the text names an unregistered sibling, not what a lesser word of
        # it names ("open", a ticket's status).
        fullest = max((sum(p.values()) for p in scores.values()), default=0)
        # "5号拖拉机" names one specific tractor: only an entity carrying that number answers, never a sibling.
        norm = normalize(text).text
        numbered = [(m.start(), m.end(), m.group()) for m in _NUMBER_IN_TEXT.finditer(norm)]
        numbers = {number for _s, _e, number in numbered}
        if numbers:
            scores = {eid: parts for eid, parts in scores.items() if numbers & set(parts)}
            # A number glued to a part the entity's name holds is that part's number: "9号楼" of the text is not the
            # "号楼" of 3号楼1号客梯, however many other numbers ("1号") agree.
            scores = {eid: parts for eid, parts in scores.items()
                      if all(number in parts for ns, ne, number in numbered
                             if any(s < ne and ns < e and (s, e) != (ns, ne) for s, e, _p in spans[eid]))}
        # English numbers a name the same way, after a space: "Transit 2" is Ford Transit van 2, and "Transit 3" none
        # of the Transits; a number right after a part found must be one the entity's names carry.
        counted = [(m.start(), int(m.group())) for m in _NUMBER_AFTER_WORD.finditer(norm)]
        if counted:
            scores = self._numbers_agree(scores, spans, [(ns - 1, number) for ns, number in counted])
        # And glued after a Chinese part: "逐浪2" is 逐浪2号, "锦绣花园18栋" none of 锦绣花园12栋 / 15栋.
        glued_numbers = [(m.start(), int(m.group())) for m in _NUMBER_AFTER_CJK.finditer(norm)
                         if not CJK.match(norm[m.end():m.end() + 1]) or norm[m.end()] in self._after_number]
        if glued_numbers:
            scores = self._numbers_agree(scores, spans, glued_numbers)
        # A code glued to a part ("宝马X3" where the registry has 宝马X5) must be the entity's own: another code names
        # another model, as another number names another building.
        glued = [(m.start(), m.end(), m.group()) for m in _GLUED_CODE.finditer(norm)]
        if glued:
            scores = {eid: parts for eid, parts in scores.items()
                      if all(code in self._codes.get(eid, ()) or code in parts for cs, ce, code in glued
                             if any(e in (cs, cs - 1) or s in (ce, ce + 1) for s, e, _p in spans[eid]))}
        if not scores:
            return [], []
        top = max(sum(p.values()) for p in scores.values())
        if top < fullest and (numbers or counted or glued_numbers or glued):
            return [], []
        ids = sorted(eid for eid, parts in scores.items() if sum(parts.values()) == top)
        return ids, sorted({p for eid in ids for p in scores[eid]})

    def _numbers_agree(self, scores: dict, spans: dict, numbers: list[tuple[int, int]]) -> dict:
        """The entities whose parts before each (end, number) carry that number. The words before a number are
        read as far back as any part found reaches ("锦绣花园18栋": what holds only 锦绣 must carry 18 too)."""
        found = [span for entity_spans in spans.values() for span in entity_spans]
        for end, number in numbers:
            start = end
            while (back := min((s for s, e, _p in found if e == start), default=start)) < start:
                start = back  # parts that run on into each other: 锦绣 + 花园 before "18栋"

            def agrees(eid: int) -> bool:
                inside = [(e, part) for s, e, part in spans[eid] if start <= s and e <= end]
                last = max((e for e, _part in inside), default=None)
                return all(self._numbered_by(eid, part, number) for e, part in inside if e == last)

            scores = {eid: parts for eid, parts in scores.items() if agrees(eid)}
        return scores

    def _numbered_by(self, eid: int, part: str, number: int) -> bool:
        """Whether a name or value of `eid` that holds `part` carries `number`."""
        return any(number in numbers for key, numbers in self._key_numbers.get(eid, ()) if part in key)

    def counted(self, text: str) -> list[tuple[frozenset[str], int]]:
        """The numbers of `text` that count registered words, with those words: "7号泊位" → ({泊位}, 7), "Brass lantern
        3" → ({brass, lantern}, 3), "锦绣15栋" → ({锦绣}, 15). A mention read that way names one numbered thing."""
        norm = normalize(text).text
        after_word = list(_NUMBER_AFTER_WORD.finditer(norm))
        after_cjk = [m for m in _NUMBER_AFTER_CJK.finditer(norm)
                     if not CJK.match(norm[m.end():m.end() + 1]) or norm[m.end()] in self._after_number]
        qualifiers = [(m, number) for m in _NUMBER_IN_TEXT.finditer(norm)
                      if (number := _counted_number(m.group()[:-1])) is not None]
        if not (after_word or after_cjk or qualifiers):
            return []  # most texts have no number: the automata are not scanned for them
        words = [(start, end, word) for start, end, word, _ids in (*_hits(self._automaton, text),
                                                                    *_hits(self._type_automaton, text))
                 if not is_qualifier(word)]

        def run(pos: int, back: bool) -> frozenset[str]:
            found: set[str] = set()
            while True:  # the words running on into each other (or one space apart) from `pos`, backwards or on
                if back:
                    near = [(s, e, w) for s, e, w in words if e == pos or (e == pos - 1 and norm[e] == " ")]
                else:
                    near = [(s, e, w) for s, e, w in words if s == pos or (s == pos + 1 and norm[pos] == " ")]
                if not near or len(found) > 8:
                    return frozenset(found)
                found.update(w for _s, _e, w in near)
                pos = min(s for s, _e, _w in near) if back else max(e for _s, e, _w in near)

        out = [(run(m.start(), True), int(m.group())) for m in after_word]
        # "西坪6号机位": a number glued after a word and before 号 counts the words on both sides.
        out += [(run(m.start(), True) | (run(m.end() + 1, False) if norm[m.end():m.end() + 1] == "号" else frozenset()),
                 int(m.group())) for m in after_cjk]
        out += [(run(m.end(), False), number) for m, number in qualifiers]
        return [(ws, n) for ws, n in out if ws]

    def numbered(self, number: int) -> frozenset[int]:
        """The entities a name or alias of which carries `number` ("报修单0088" carries 88)."""
        return self._by_number.get(number, frozenset())

    def carries(self, eid: int, words: Iterable[str], number: int) -> bool | None:
        """Whether a name or value of `eid` holding one of `words` carries `number` (in digits or Chinese numerals);
        None when none holds them (the number counts something else)."""
        own = self._key_numbers.get(eid, ())
        keys = [(key, numbers) for key, numbers in own if any(w in key for w in words)]
        if not keys:
            return None
        spelt = _chinese_numeral(number)

        def carry(pairs) -> bool:
            return any(number in numbers or (spelt and spelt in key) for key, numbers in pairs)

        if carry(keys):  # "Debian 12", "Hall 1": the value's own number
            return True
        names = self._name_keys.get(eid, frozenset())
        if not any(key in names for key, _n in keys):  # "西坪6号": the 6 of what stands there
            return carry((key, numbers) for key, numbers in own if key in names)
        return False


_ZH_DIGITS = "零一二三四五六七八九"


def _chinese_numeral(n: int) -> str:
    """1..99 in Chinese numerals ("七", "十二", "二十"); "" beyond."""
    if not 0 < n < 100:
        return ""
    tens, units = divmod(n, 10)
    return (("" if tens == 1 else _ZH_DIGITS[tens]) + "十" if tens else "") + (_ZH_DIGITS[units] if units else "")


def _counted_number(s: str) -> int | None:
    """The number before a 号: digits, or Chinese numerals up to 99."""
    if s.isdigit():
        return int(s)
    s = s.replace("两", "二").replace("〇", "零")
    return next((n for n in range(1, 100) if _chinese_numeral(n) == s), None)


class AttributeIndex:
    """Attribute value → entity ids over one registry snapshot."""

    def __init__(self, attributes: Mapping[int, Mapping]):
        index: dict[str, set[int]] = {}
        for eid, attrs in attributes.items():
            for value in attribute_values(attrs):
                index.setdefault(value, set()).add(eid)
                # A code is typed without its joiners as often as with them ("苏A3K782" for plate 苏A·3K782, "KQ2108820").
                if any(ch.isdigit() for ch in value) and (bare := _JOINED_CODE.sub("", value)) != value:
                    index.setdefault(bare, set()).add(eid)
        self._automaton = _automaton(index)

    def find(self, text: str) -> list[tuple[str, tuple[int, ...]]]:
        """(value, entity ids) for each distinct value named in `text`; a value inside a longer value found
        at the same place is dropped ("sk-16" inside "sk-160")."""
        hits = _hits(self._automaton, text)
        kept = [h for h in hits if not any(o is not h and o[0] <= h[0] and h[1] <= o[1] and (o[1] - o[0]) > (h[1] - h[0])
                                           for o in hits)]
        out: dict[str, tuple[int, ...]] = {}
        for _start, _end, value, ids in kept:
            out[value] = ids
        return list(out.items())
