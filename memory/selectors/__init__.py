"""Read path of long-term memory."""
from memory.selectors.memories import memory_get, memory_history, memory_list, projection_lag, queue_depths  # noqa: F401
from memory.selectors.recall_pipeline import RecallItem, RecallQuery, RecallResult, recall  # noqa: F401
