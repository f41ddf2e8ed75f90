"""The read path (DESIGN §6), one module per stage: the query and its vectors (`query`,
`query_vectors`), the user's snapshot and keyword index (`snapshot*`, `keyword`), candidates
(`candidates`, `entity_focus`), back-check and lineage (`back_check`, `lineage`), ranking and rerank
(`ranking`, `rerank`, `current_state`, `conflict_marks`), access statistics (`access_stats`), and the
pipeline that runs them in order (`pipeline`)."""
from memory.recall.pipeline import recall  # noqa: F401
from memory.recall.query import RecallItem, RecallQuery, RecallResult  # noqa: F401
