"""Write path of long-term memory. Everything that changes a memory row goes through here."""
from memory.services.lifecycle import memory_touch  # noqa: F401
from memory.services.memories import (  # noqa: F401
    MemoryInput,
    WriteOutcome,
    memory_annotate,
    memory_create,
    memory_invalidate,
    memory_update,
    memory_write,
)
