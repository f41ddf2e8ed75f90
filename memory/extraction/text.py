"""Text helpers of the extraction rules. The language test, sentence split, cleaning, speaker labels
and jieba access they share with the rest of the service are in common/text/."""
from __future__ import annotations

import re


def strip_end(text: str) -> str:
    """Drop trailing sentence punctuation and spaces (content is stored without them)."""
    return text.strip().rstrip("。！!？?；;，,.、：: ").strip()


def strip_leading(pattern: re.Pattern, text: str) -> str:
    """Remove `pattern` (anchored at the start) again and again until nothing changes: stacked
    leads such as "no, actually, ..." go one by one."""
    while True:
        stripped = pattern.sub("", text, count=1)
        if stripped == text:
            return text
        text = stripped
