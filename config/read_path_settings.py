"""Settings of the read path: recall ranking, forgetting by query, context assembly. Imported by
config/settings.py (the one settings module Django loads); every variable is documented in
docs/configuration.md. Most defaults were chosen on tuning halves (docs/evaluation.md)."""
from config.env import env

# --------------------------------------------------------------------------- recall ranking
# Fused relevance = semantic * w + keyword * w, with weights chosen by the query's script (Chinese vs
# Latin); then recency, importance and access frequency are added. See docs/recall.md.
RECALL_WEIGHTS = env.json("RECALL_WEIGHTS", default={
    "semantic_zh": 0.6, "keyword_zh": 0.4, "semantic_en": 0.45, "keyword_en": 0.55,
    "recency": 0.05, "importance": 0.05, "frequency": 0.02, "entity": 0.15, "episode_penalty": 0.0,
    # With the composite embedder: the multilingual model's share of an English query's cosine.
    "multilingual_share_en": 0.2,
})
# Long queries (a dialogue or paragraph before the turn that needs a memory; memory/recall/query.py):
# from this many characters, the query vector mixes the whole with its last turn(s) and keyword
# search reads the focus only, with its weight scaled per language. Chosen on
# evaluation/data/longdialog-zh-tune.jsonl (docs/evaluation.md).
RECALL_LONG_QUERY_CHARS = env.int("RECALL_LONG_QUERY_CHARS", default=240)
RECALL_FOCUS_MIN_CHARS = env.int("RECALL_FOCUS_MIN_CHARS", default=40)
RECALL_LONG_QUERY = env.json("RECALL_LONG_QUERY", default={
    "focus_weight": 0.8, "keyword_scale_zh": 1.0, "keyword_scale_en": 1.0, "keyword_whole": False,
})
# Second look (memory/recall/rerank.py): the top `seeds` hits re-score the candidates; every candidate
# gains `weight` x its relevance to them. weight 0 turns it off (neighbours and speakers too).
# Turn neighbours: memories of the turns within `neighbours` positions of the best `neighbour_pool`
# candidates' turns are candidates too (one SQL statement); those next to the top `seeds` hits gain
# `neighbour_weight`. A question naming a transcript speaker: that speaker's turns gain `speaker_weight`.
# Background: every candidate loses `background_weight` x the semantic weight x (its cosine to the mean
# of all candidates' vectors - the lowest such cosine): a line close to everything ("Maria: I bet")
# answers nothing in particular. Before the seeds are chosen; not under `background_min` candidates
# (a handful of memories: their mean is the question's own topic); 0 turns it off. In-process only.
# Chosen on the LoCoMo tuning half (docs/evaluation.md, "Turn neighbours and the named speaker",
# "The background of the candidates").
RECALL_SECOND_LOOK = env.json("RECALL_SECOND_LOOK", default={
    "seeds": 2, "weight": 0.4, "expand": False,
    "neighbours": 2, "neighbour_pool": 4, "neighbour_weight": 0.3, "speaker_weight": 0.2,
    "background_weight": 1.6, "background_min": 20,
})
# Each stage earns its weight per query (memory/recall/ranking.py, docs/architecture.md "Read
# path"). `conversation_turns`: a query of this many non-empty lines or more is a
# conversation (memory/recall/query.py; 0: only long queries are). `keyword_norm`: "mass" scales a
# memory's keyword score by the share of the query's term weight (idf) it matches, so a long query's
# common words weigh little; "top" scales by the best match (before issue 40); "top_or_mass" by the
# larger of the two (a query whose terms one memory all holds scales as "top" did). `prior_scale`:
# recency, importance and access are multiplied by this. The second look and the turn-neighbour lift
# need a confident seed: with `second_look_needs_pool`, a user with more memories than one candidate
# list; with `second_look_margin` > 0, a top hit that leads the `seeds`+1-th by this much raw cosine.
# `focus_turns`: at most this many of the last speaker's turns make the focus. `parts_max`: a
# conversation's semantic score is (1 - this) x the blended vector's cosine + this x the best cosine of
# its parts (the whole, the focus): no extra encoder call. `semantic_lead` [from, to]: the embedder's
# top candidate leading the next different piece of evidence by `from` raw cosine starts to count as
# sure, by `to` fully (on the tune files its top is right 86% of the time at 0.05, 96% at 0.15); when
# keyword search puts other memories first (the top holds under `keyword_agree` x the best keyword
# score) and its best score is shared, keyword evidence yields ([0, 0]: off).
# Chosen on the *-tune files of evaluation/data/robust and longdialog-zh-tune.jsonl (docs/evaluation.md).
RECALL_CONFIDENCE = env.json("RECALL_CONFIDENCE", default={
    "conversation_turns": 2, "keyword_norm": "top_or_mass", "prior_scale": 1.0,
    "second_look_needs_pool": True, "second_look_margin": 0.0, "focus_turns": 2, "parts_max": 0.5,
    "semantic_lead": [0.05, 0.15], "keyword_agree": 0.5,
})
ACCESS_STATS_FLUSH_SECONDS = env.float("ACCESS_STATS_FLUSH_SECONDS", default=5.0)
# Short turns and memories: weak length normalisation and early term saturation (LoCoMo-tuned, docs/evaluation.md).
KEYWORD_BM25_K1 = env.float("KEYWORD_BM25_K1", default=0.9)
KEYWORD_BM25_B = env.float("KEYWORD_BM25_B", default=0.3)
# Subtracted from an episode whose message's memories were all superseded (memory/recall/lineage.py). 0 since
# session 22: the current memory of the subject is lifted above its stale episode anyway (ranking.rank), and the
# penalty pushed what was said then out of reach of questions about then (LoCoMo, 3 conversations, R@5 67.2 -> 69.0;
# all ten at 0: 64.4 / 75.7 / 86.5, session 21's tree at 0.3: 63.9 / 75.1 / 86.0).
RECALL_STALE_EPISODE_PENALTY = env.float("RECALL_STALE_EPISODE_PENALTY", default=0.0)
# Recall along relations (memory/recall/entity_focus.py): a query that names a business entity brings
# in memories linked to it and to its neighbours one hop away (at most this many, newest first); a direct
# link adds RECALL_WEIGHTS["entity"], a link one hop away this share of it.
RECALL_ENTITY_FOCUS = env.bool("RECALL_ENTITY_FOCUS", default=True)
RECALL_ENTITY_CANDIDATES = env.int("RECALL_ENTITY_CANDIDATES", default=20)
RECALL_ENTITY_HOP_SHARE = env.float("RECALL_ENTITY_HOP_SHARE", default=0.5)
# A neighbour reached through a relation that has ended (history, dated in `entity_path`): this share of a hop.
RECALL_ENTITY_PAST_SHARE = env.float("RECALL_ENTITY_PAST_SHARE", default=0.5)
# Chinese character bigrams as extra keyword terms beside jieba words (memory/recall/keyword.py).
KEYWORD_ZH_BIGRAMS = env.bool("KEYWORD_ZH_BIGRAMS", default=False)
RECALL_COLLAPSE_SAME_SOURCE = env.bool("RECALL_COLLAPSE_SAME_SOURCE", default=True)
RECALL_NORMALIZE_SEMANTIC = env.bool("RECALL_NORMALIZE_SEMANTIC", default=True)
RECALL_RECENCY_HALF_LIFE_DAYS = env.float("RECALL_RECENCY_HALF_LIFE_DAYS", default=30.0)
# Per retriever, at least 3k. 40 vs 60 at 100 memories per user: same top-5 hit rate (0.89), p95 -1.8 ms
# (bench.recall --candidates, docs/performance-history.md); LoCoMo fetches k=25, so 75 there either way.
RECALL_CANDIDATES = env.int("RECALL_CANDIDATES", default=40)
# Per-user recall snapshots (memory/recall/snapshot.py; docs/configuration.md): users kept (LRU), wait for
# a rebuild under way, rebuild after a write here, build the most recently active users at start-up.
RECALL_CORPUS = env.json("RECALL_CORPUS", default={"users": 256, "wait_seconds": 1.0, "refresh": True, "warm": True})
PYTHON_SWITCH_INTERVAL_SECONDS = env.float("PYTHON_SWITCH_INTERVAL_SECONDS", default=0.001)  # config/wsgi.py
RECALL_MIN_RELEVANCE = env.float("RECALL_MIN_RELEVANCE", default=0.05)
# Current and history per query (memory/recall/current_state.py, memory/subjects/current.py): among
# the top `window` x k ranked items (at most `max_items`, never fewer than k), an older preference or fact
# is presented as history when a newer item of the user's says a change (a change cue, or the old value
# named as gone) and is about the same subject: subject score >= `subject` with a cosine as written >=
# `alike`, or a cosine >= `close`. Tuned on the tuning halves (python -m bench.history, docs/evaluation.md).
# At most `max_pairs` pairs per recall are read as text (best-ranked newer items first): the cost bound.
# `reorder`: among the k served, a history item moves just below its current item (false, the default:
# marked only, the order is the ranking's; moving cost LoCoMo R@5 / R@10 65.2 / 74.9 -> 63.6 / 73.1, D18).
# `anchor` (D34): among the first `anchor` answers a history item moves below its current item whatever
# `reorder` says (the move stays inside them), and a pair the write path's judge read as a change though
# worded far apart (MEMORY_LEARNED_REPLACE["far"]) is history there; 0: neither.
RECALL_HISTORY = env.json("RECALL_HISTORY", default={
    "enabled": True, "reorder": False, "window": 3, "max_items": 30, "max_pairs": 4,
    "subject": 0.3, "alike": 0.35, "close": 0.6, "judge_min": 0.3, "anchor": 3})
# "Forget what matches this query": a memory is in the preview when its cosine to the query reaches
# this, or it shares the query's best keyword match.
FORGET_PREVIEW_MIN_COSINE = env.float("FORGET_PREVIEW_MIN_COSINE", default=0.5)
# Or, when nothing reaches that, the best match alone if its cosine reaches the first figure and leads every
# other memory by the second (a paraphrase: "孩子在哪上学" for "我儿子在杭州学军小学读三年级", cosine 0.47).
FORGET_PREVIEW_LEAD_COSINE = env.float("FORGET_PREVIEW_LEAD_COSINE", default=0.35)
FORGET_PREVIEW_LEAD_MARGIN = env.float("FORGET_PREVIEW_LEAD_MARGIN", default=0.15)
# An episode restates a forgotten memory when cosine + the share of the memory's character bigrams it repeats
# reaches this (memory/services/forget_echoes.py; calibrated in docs/evaluation.md "Forget echoes").
FORGET_ECHO_MIN_SCORE = env.float("FORGET_ECHO_MIN_SCORE", default=0.85)
FORGET_ECHO_SCAN = env.int("FORGET_ECHO_SCAN", default=5000)  # most recent episodes of the user compared per forget

# --------------------------------------------------------------------------- context assembly
CONTEXT_DEFAULT_BUDGET = env.int("CONTEXT_DEFAULT_BUDGET", default=4000)
# Each section's share of the room left after the system prompt and the new message (sum <= 1); a
# share a section does not need goes to the others in priority order (docs/api.md "Context").
CONTEXT_SECTION_BUDGETS = env.json("CONTEXT_SECTION_BUDGETS", default={
    "evidence": 0.5, "task_state": 0.06, "preferences": 0.04, "recent": 0.16, "memories": 0.05, "episodes": 0.03,
    "summary": 0.12})
# The caller's evidence: at most this many passages of at most this many characters each; a passage
# longer than CONTEXT_EVIDENCE_MAX_TOKENS is cut to it (and reported as truncated).
CONTEXT_EVIDENCE_MAX_ITEMS = env.int("CONTEXT_EVIDENCE_MAX_ITEMS", default=50)
CONTEXT_EVIDENCE_MAX_CHARS = env.int("CONTEXT_EVIDENCE_MAX_CHARS", default=8000)
CONTEXT_EVIDENCE_MAX_TOKENS = env.int("CONTEXT_EVIDENCE_MAX_TOKENS", default=1000)
CONTEXT_TOOL_RESULT_MAX_TOKENS = env.int("CONTEXT_TOOL_RESULT_MAX_TOKENS", default=300)
CONTEXT_RECALL_K = env.int("CONTEXT_RECALL_K", default=8)
CONTEXT_MAX_PREFERENCES = env.int("CONTEXT_MAX_PREFERENCES", default=10)  # always-included standing preferences
SUMMARY_ROLL_CHUNK = env.int("SUMMARY_ROLL_CHUNK", default=8)
