# TEMPORARY re-export for the parallel read-path branch; the coordinator removes it at merge
from common.text import is_cjk, is_small_talk, split_speaker, tokenize  # noqa: F401
