"""What a "forget what matches this query" request is about (DESIGN §9).

A user asks to forget in their own words, and the agent passes those words on: "孩子在哪上学那条删掉吧",
"forget where I said we're moving". Two things follow from that, and both are read from the closed
class of words that make up the *act* of forgetting (verbs of deleting and forgetting, references to
"what I said", "that entry", politeness particles), never from what is being forgotten:

- the words of the act carry no meaning about the target, yet they pull the query's vector and
  keywords towards anything else said about deleting: they are taken off before the search;
- the turn in which the user asked is itself stored (an episode) and is the closest match of its own
  words. It restates the request, not the fact, so it must not stand in for the target (the fact
  would survive while the request is forgotten).
"""
from __future__ import annotations

import re
import unicodedata

__all__ = ["is_request_turn", "query_subject"]

# The act of forgetting: verbs (with their aspect and object markers) and references to a stored statement.
_ZH_ACT = re.compile(
    r"(?:请|麻烦|帮我|给我|你)?(?:把|将)?"
    r"(?:删掉|删了|删除|删去|去掉|抹掉|清掉|清除|忘掉|忘了吧|忘记掉|"
    r"(?:别|不要|不用|无需|不必|不需要)(?:再)?(?:记|存|保存|记录|留)(?:着|住|了|下来|下)?)"
    r"|(?:我|之前|刚才|上次|以前)*(?:说|讲|提|告诉你)(?:过)?的"
    r"|(?:那|这|哪)(?:一)?(?:条|个|段|些|件)(?:记录|信息|内容|事)?"
    r"|关于|有关|的事|的记录|的信息|^(?:请|麻烦你?|帮我)?(?:把|将)"
    r"|[吧啊哈呀呗啦了嘛]+(?=[，。！!,.\s]|$)"
)
_EN_ACT = re.compile(
    r"\b(?:please\s+|can you\s+|could you\s+|just\s+)?"
    r"(?:forget|delete|remove|erase|wipe|drop|clear|(?:do not|don'?t|stop)\s+(?:remember(?:ing)?|keep(?:ing)?|stor(?:e|ing)|sav(?:e|ing)))"
    r"(?:\s+(?:about|all about|everything about|the (?:part|bit|thing|note|entry|memory) (?:about|where|that)))?\b"
    r"|\b(?:what|that)\s+i\s+(?:said|told you|mentioned)(?:\s+about)?\b"
    r"|\bi\s+(?:said|told you|mentioned)\b"
    r"|\b(?:that|this|the)\s+(?:note|entry|memory|record)\b",
    re.IGNORECASE,
)
_VERB = re.compile(
    r"删掉|删了|删除|删去|去掉|抹掉|清掉|清除|忘掉|忘了吧|(?:别|不要|不用|不必)(?:再)?(?:记|存|保存|记录)"
    r"|\b(?:forget|delete|remove|erase|wipe)\b|\b(?:do not|don'?t|stop)\s+(?:remember|keep|store|save)",
    re.IGNORECASE,
)
_SPACE = re.compile(r"\s+")
_TOKEN = re.compile(r"[a-z0-9]+|[\u3400-\u9fff]")


def query_subject(query: str) -> str:
    """The query without the words of the act; the query itself when nothing else is left."""
    text = unicodedata.normalize("NFKC", query or "")
    stripped = _EN_ACT.sub(" ", _ZH_ACT.sub(" ", text))
    stripped = _SPACE.sub(" ", stripped).strip(" ，。！!,.?？")
    return stripped if len(_TOKEN.findall(stripped.casefold())) >= 2 else text.strip()


def _bigrams(text: str) -> set[str]:
    tokens = _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())
    return {a + b for a, b in zip(tokens, tokens[1:])} | {t for t in tokens if len(t) > 1}


def is_request_turn(text: str, query: str) -> bool:
    """The stored turn that asked for this forget: it speaks the act and holds most of the query's
    subject. A statement that merely shares the topic carries no verb of forgetting."""
    if not _VERB.search(unicodedata.normalize("NFKC", text or "")):
        return False
    subject = _bigrams(query_subject(query))
    if not subject:
        return False
    return len(subject & _bigrams(text)) / len(subject) >= 0.5
