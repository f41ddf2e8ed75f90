"""Read path of long-term memory."""
from memory.selectors.backlog import EXTRACTABLE_ROLES, backlog_counts, extraction_pending  # noqa: F401
from memory.selectors.memories import (  # noqa: F401
    conflict_list,
    memory_get,
    memory_history,
    memory_list,
    projection_lag,
    queue_depths,
)
