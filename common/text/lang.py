"""Which script a text is written in. Three questions, three rules, kept apart because they answer
differently on mixed text and each caller needs its own answer (docs/decisions.md, D24):

- `cjk_ratio`: the share of CJK ideographs among letters and ideographs, for callers that compare it
  with a threshold of their own (the summariser asks "any Chinese at all?", `> 0`).
- `is_cjk`: mostly Chinese (share ≥ 0.3). Which half of a composite vector scores a text: MiniLM turns
  most Chinese into [UNK], so such a text is compared with the multilingual half only. Dedup, forget
  echoes, forget rules, the subject judge and recall all ask this one question.
- `detect_lang`: Chinese characters at least as many as Latin *words*: which rule set (zh or en) reads
  a statement. A Chinese sentence naming "MySQL" stays Chinese, an English one naming "佳木斯" stays
  English. On "我喜欢PostgreSQL" the two rules disagree (zh by words, not mostly Chinese by letters),
  and the extraction lexicons were tuned on this one.
"""

from __future__ import annotations

import re

# CJK Unified Ideographs + Extension A + compatibility ideographs.
CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_RUN = re.compile(f"[{CJK}]+")
_CJK_CHAR = re.compile(f"[{CJK}]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
MOSTLY_CJK = 0.3


def cjk_ratio(text: str) -> float:
    """Share of CJK ideographs among letters/ideographs (0.0 for text without any)."""
    cjk = latin = 0
    for ch in text:
        if CJK_RUN.match(ch):
            cjk += 1
        elif ch.isalpha():
            latin += 1
    total = cjk + latin
    return cjk / total if total else 0.0


def is_cjk(text: str) -> bool:
    """Mostly Chinese (cjk_ratio ≥ 0.3): the read path scores such a text with the multilingual half of
    a composite vector only (MiniLM turns most Chinese into [UNK])."""
    return cjk_ratio(text) >= MOSTLY_CJK


def detect_lang(text: str) -> str:
    """'zh' when Chinese characters are at least as many as Latin words: a Chinese sentence that
    names "MySQL" stays Chinese, an English one that names "佳木斯" stays English."""
    cjk = len(_CJK_CHAR.findall(text))
    return "zh" if cjk and cjk >= len(_LATIN_WORD.findall(text)) else "en"
