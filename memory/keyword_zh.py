"""Character bigrams of Chinese text, as extra keyword terms beside jieba's words.

jieba segments one phrase differently in a long question and a short memory ("上回保养" vs "保养了"),
and an out-of-vocabulary name splits into single characters; overlapping bigrams still match
(the usual CJK fallback of full-text engines, e.g. Lucene's CJKBigramFilter). Prefixed so they
never collide with a word term.
"""
import re

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")


def bigrams(text: str) -> list[str]:
    out = []
    for run in _CJK_RUN.findall(text):
        out.extend("\u2082" + run[i:i + 2] for i in range(len(run) - 1))
    return out
