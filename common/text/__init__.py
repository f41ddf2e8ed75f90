"""The text vocabulary (zh + en) every app shares: language tests (`lang`), words and the one jieba
loader (`segment`), sentences and transcript speaker labels (`sentences`), normal forms (`normalize`).

Where two helpers answer a similar question by different rules they are kept apart on purpose and
named for their use; each module's docstring says why (docs/decisions.md, D13 and D24)."""

from common.text.lang import cjk_ratio, detect_lang, is_cjk
from common.text.normalize import clean, content_hash, normalize_content, normalize_for_compare
from common.text.segment import EN_STOPWORDS, ensure_jieba, is_small_talk, jaccard, overlap, pos_cut, pos_tag, term_set, tokenize
from common.text.sentences import split_message_sentences, split_sentences, split_speaker

__all__ = [
    "EN_STOPWORDS",
    "cjk_ratio",
    "clean",
    "content_hash",
    "detect_lang",
    "ensure_jieba",
    "is_cjk",
    "is_small_talk",
    "jaccard",
    "normalize_content",
    "normalize_for_compare",
    "overlap",
    "pos_cut",
    "pos_tag",
    "split_message_sentences",
    "split_sentences",
    "split_speaker",
    "term_set",
    "tokenize",
]
